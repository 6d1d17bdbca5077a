package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Bound is a call's typed arguments checked against a prompt's
// declaration: Params by name (string, float64 or bool; an optional
// argument neither given nor defaulted is absent), and Args, the same as
// compact JSON with sorted keys, which is what a prompt with typed
// arguments sees as args (prompt-language §2.4).
type Bound struct {
	Args   string
	Params map[string]any
}

// Bind checks given (JSON-decoded values, or strings when text is set, as
// MCP prompts/get sends them) against decl, which must be non-nil, and
// applies the defaults. The error names the prompt and the first argument
// at fault, in this order: an unknown name (the first in byte order), a
// required argument missing, a value of the wrong type. With text, a
// string is read as its declared type (42, 2.5, true) and "" counts as
// not given: a slash-command form sends its unfilled fields that way.
func Bind(name string, decl []Argument, given map[string]any, text bool) (Bound, error) {
	var unknown []string
	for k := range given {
		if !slices.ContainsFunc(decl, func(a Argument) bool { return a.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Bound{}, fmt.Errorf("prompt %s has no argument %s; its arguments are %s", strconv.Quote(name), strconv.Quote(unknown[0]), DescribeArguments(decl))
	}
	params := make(map[string]any, len(decl))
	for _, a := range decl {
		v, ok := given[a.Name]
		if ok && text && v == "" {
			ok = false
		}
		if !ok {
			switch {
			case a.Required:
				about := ""
				if a.Description != "" {
					about = ": " + a.Description
				}
				return Bound{}, fmt.Errorf("prompt %s needs argument %s (%s%s); its arguments are %s", strconv.Quote(name), strconv.Quote(a.Name), a.Type, about, DescribeArguments(decl))
			case a.Default != nil:
				params[a.Name] = a.Default
			}
			continue
		}
		got, ok := coerceGiven(a.Type, v, text)
		if !ok {
			return Bound{}, fmt.Errorf("argument %s of prompt %s must be %s, got %s", strconv.Quote(a.Name), strconv.Quote(name), a.Type.Phrase(), preview(v))
		}
		params[a.Name] = got
	}
	args, err := compactJSON(params)
	if err != nil {
		return Bound{}, fmt.Errorf("encode the arguments of prompt %s: %w", strconv.Quote(name), err)
	}
	return Bound{Args: args, Params: params}, nil
}

// DescribeArguments lists declared arguments the way messages show them:
// topic (string, required), count (integer).
func DescribeArguments(decl []Argument) string {
	parts := make([]string, len(decl))
	for i, a := range decl {
		parts[i] = a.Name + " (" + string(a.Type)
		if a.Required {
			parts[i] += ", required"
		}
		parts[i] += ")"
	}
	return strings.Join(parts, ", ")
}

// coerceGiven reads one given value as t; with text, a string is first
// read the way a person types it.
func coerceGiven(t ArgType, v any, text bool) (any, bool) {
	if s, isString := v.(string); text && isString && t != ArgString {
		s = strings.TrimSpace(s)
		if t == ArgBoolean {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return nil, false
			}
			return b, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, false
		}
		v = f
	}
	return CoerceArgument(t, v)
}

// PreviewValue renders a value for a message or a schema: its JSON, cut
// at 80 bytes.
func PreviewValue(v any) string { return preview(v) }

func preview(v any) string {
	s, err := compactJSON(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// compactJSON is v as compact JSON without HTML escaping: values are
// prose, and a prompt reads them back verbatim.
func compactJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
