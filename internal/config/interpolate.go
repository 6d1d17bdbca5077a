package config

import (
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// LookupFunc answers whether a variable is set and its value, like
// os.LookupEnv.
type LookupFunc func(name string) (string, bool)

// unresolvedError is a ${NAME} whose NAME is unset.
type unresolvedError struct{ name string }

func (e *unresolvedError) Error() string { return "unresolved environment variable " + e.name }

// errUnclosed is a ${ with no } after it.
var errUnclosed = errors.New("unclosed ${...} interpolation")

// interpolate expands one string value (mcp-server §2.5): "$$" is a literal
// "$", "${NAME}" is NAME's value (NAME is everything up to the next "}", any
// characters, possibly empty), and any other "$" is literal, so "100$" stays
// "100$". Substituted text is not scanned again.
func interpolate(s string, lookup LookupFunc) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i+1:]
		switch {
		case strings.HasPrefix(s, "$"):
			b.WriteByte('$')
			s = s[1:]
		case strings.HasPrefix(s, "{"):
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return "", errUnclosed
			}
			name := s[1:end]
			v, ok := lookup(name)
			if !ok {
				return "", &unresolvedError{name: name}
			}
			b.WriteString(v)
			s = s[end+1:]
		default:
			b.WriteByte('$')
		}
	}
}

// tomlPath is a key path in the parsed document, e.g. {"server", "bind"}.
type tomlPath []string

// interpolateTree expands every string value under v in place, recursing
// into tables and arrays; keys, numbers, booleans and dates are left alone.
// Tables are walked in sorted key order, so "the first unresolved variable"
// is the same on every load. skip names one path the caller has already
// expanded. fail turns a scanner error into the caller's error, given the
// path of the value at fault.
func interpolateTree(v any, path tomlPath, lookup LookupFunc, skip tomlPath, fail func(tomlPath, error) error) (any, error) {
	switch t := v.(type) {
	case string:
		out, err := interpolate(t, lookup)
		if err != nil {
			return nil, fail(path, err)
		}
		if !utf8.ValidString(out) {
			// A variable held bytes that are not UTF-8; TOML values must be.
			return nil, fail(path, errNotUTF8)
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub := append(slices.Clip(path), k)
			if slices.Equal(sub, skip) {
				continue
			}
			out, err := interpolateTree(t[k], sub, lookup, skip, fail)
			if err != nil {
				return nil, err
			}
			t[k] = out
		}
		return t, nil
	case []any:
		for i, e := range t {
			out, err := interpolateTree(e, path, lookup, skip, fail)
			if err != nil {
				return nil, err
			}
			t[i] = out
		}
		return t, nil
	default:
		return v, nil
	}
}

var errNotUTF8 = errors.New("the substituted value is not valid UTF-8")
