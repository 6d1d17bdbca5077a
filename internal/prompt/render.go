package prompt

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RenderValue renders a JSON-shaped value the way a {{ }} placeholder shows
// it: a string verbatim (no quotes), a number in its natural form (an
// integral float prints without ".0", since Lua 5.1 has no integer type to
// tell 42 from 42.0), booleans as true/false, null as null, and arrays and
// objects as compact JSON.
//
// v is what decoding JSON (or converting a Lua value) yields: nil, bool,
// string, float64, any Go integer, json.Number, []any or map[string]any.
// Object keys are sorted: Lua tables have no order, and sorting makes the
// same data always produce the same prompt text. Strings inside JSON escape
// only what JSON requires (no HTML escaping); invalid UTF-8 becomes U+FFFD.
// NaN and infinities are not JSON and are an error.
func RenderValue(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := appendJSON(nil, v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func appendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return appendJSONString(b, v), nil
	case float64:
		return appendFloat(b, v)
	case float32:
		return appendFloat(b, float64(v))
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case json.Number:
		if !json.Valid([]byte(v)) {
			return nil, fmt.Errorf("%q is not a JSON number", string(v))
		}
		return append(b, v...), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("a %T is not JSON data", v)
}

// appendFloat formats like encoding/json: shortest round-trip digits,
// exponent form only for very large or very small magnitudes.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("the number %v is not JSON data", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 reads better as 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, "\ufffd"...)
		case r == '"':
			b = append(b, `\"`...)
		case r == '\\':
			b = append(b, `\\`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\b':
			b = append(b, `\b`...)
		case r == '\f':
			b = append(b, `\f`...)
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// RenderPath looks p.Keys up in root (the value p.Head named: the var
// clipboard, the sys table, a global viewed as JSON) and renders what it
// finds. Only objects can be stepped into: templates do not index arrays.
// A missing key is TplMissingKey, a null TplNullValue, a step into a
// non-object TplNotATable, an unrenderable value TplSerialize.
func RenderPath(p Path, root any) (string, error) {
	v := root
	for i, k := range p.Keys {
		switch cur := v.(type) {
		case map[string]any:
			next, ok := cur[k]
			if !ok {
				return "", MissingKeyError(p)
			}
			v = next
		case nil:
			return "", NullValueError(p)
		default:
			at := strings.Join(append([]string{p.Head}, p.Keys[:i]...), ".")
			return "", &TemplateError{Kind: TplNotATable,
				Msg: fmt.Sprintf("%s is %s, not a table, in {{ %s }}", Preview(at), jsonTypeName(cur), Preview(p.Raw))}
		}
	}
	if v == nil {
		return "", NullValueError(p)
	}
	s, err := RenderValue(v)
	if err != nil {
		return "", &TemplateError{Kind: TplSerialize, Err: err,
			Msg: fmt.Sprintf("{{ %s }} cannot be rendered: %v", Preview(p.Raw), err)}
	}
	return s, nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return "a number"
}

// NilReplyError is {{ reply }} with no prior reply.
func NilReplyError() *TemplateError {
	return &TemplateError{Kind: TplNilReply, Msg: "{{ reply }} is nil (no prior section reply)"}
}

// NilItemError is {{ item }} outside a fanout arm.
func NilItemError() *TemplateError {
	return &TemplateError{Kind: TplNilItem, Msg: "{{ item }} is nil (not inside a fanout arm)"}
}

// MissingKeyError is a path whose key is absent.
func MissingKeyError(p Path) *TemplateError {
	return &TemplateError{Kind: TplMissingKey, Msg: fmt.Sprintf("missing {{ %s }}", Preview(p.Raw))}
}

// NullValueError is a path whose value is JSON null; it reads like a
// missing key because to the author it is one.
func NullValueError(p Path) *TemplateError {
	return &TemplateError{Kind: TplNullValue, Msg: fmt.Sprintf("missing {{ %s }}", Preview(p.Raw))}
}

// UnknownNamespaceError is a first segment that is neither a namespace nor
// a global of the section VM.
func UnknownNamespaceError(p Path) *TemplateError {
	return &TemplateError{Kind: TplUnknownNamespace,
		Msg: fmt.Sprintf("unknown namespace or global '%s' in {{ %s }}", Preview(p.Head), Preview(p.Raw))}
}

// NotJSONError is a global holding something with no JSON form; what
// names it ("a function", "userdata", "a thread").
func NotJSONError(p Path, what string) *TemplateError {
	return &TemplateError{Kind: TplSerialize,
		Msg: fmt.Sprintf("global '%s' in {{ %s }} is not JSON data: it holds %s; store data in it instead",
			Preview(p.Head), Preview(p.Raw), what)}
}
