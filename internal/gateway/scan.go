package gateway

import (
	"encoding/json"
	"unicode/utf8"
)

// A chat reply was read by encoding/json five times over: the body into a
// map of raw members, then choices, choices[0] and its message each again
// (every call validates its input before decoding it and copies each
// member), then every string member: 63 allocations a turn more and a
// few scans of the same bytes, for the reply of every model turn
// (docs/benchmarks.md, "Prose runs at scale"). The body is now validated
// once (json.Valid), and its objects, arrays and plain strings are read in
// place by the scan below, as sub-slices of the body. What encoding/json
// would do stays the definition: anything the scan does not read exactly
// as encoding/json does (a key or a string with escapes, a string that is
// not valid UTF-8, which encoding/json replaces) goes to encoding/json, and
// a fuzz test holds the two to the same answers.

// rawObject is json.Unmarshal of raw into a map of raw members, for raw
// that json.Valid accepts (valid says so; otherwise, and for anything the
// scan leaves to it, it is encoding/json). Members are sub-slices of raw.
func rawObject(raw []byte, valid bool) (map[string]json.RawMessage, error) {
	if valid {
		if m, ok := scanObject(raw); ok {
			return m, nil
		}
	}
	var m map[string]json.RawMessage
	err := json.Unmarshal(raw, &m)
	return m, err
}

// rawArray is json.Unmarshal of raw into a slice of raw elements, as
// rawObject is for objects.
func rawArray(raw []byte, valid bool) ([]json.RawMessage, error) {
	if valid {
		if a, ok := scanArray(raw); ok {
			return a, nil
		}
	}
	var a []json.RawMessage
	err := json.Unmarshal(raw, &a)
	return a, err
}

// scanObject reads the members of the valid JSON object raw; ok is false
// when raw is not an object or a key has an escape.
func scanObject(raw []byte) (map[string]json.RawMessage, bool) {
	i := skipJSONSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	m := make(map[string]json.RawMessage, 8)
	for i++; ; i++ {
		i = skipJSONSpace(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			return m, true // the closing brace (or an empty object)
		}
		key, end, escaped := scanString(raw, i)
		if escaped || !utf8.Valid(key) {
			return nil, false
		}
		i = skipJSONSpace(raw, end) // at the colon
		start := skipJSONSpace(raw, i+1)
		if i = skipValue(raw, start); i < 0 {
			return nil, false
		}
		m[memberName(key)] = raw[start:i:i]
		if i = skipJSONSpace(raw, i); i >= len(raw) || raw[i] != ',' {
			return m, true
		}
	}
}

// scanArray reads the elements of the valid JSON array raw; ok is false
// when raw is not an array.
func scanArray(raw []byte) ([]json.RawMessage, bool) {
	i := skipJSONSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	a := []json.RawMessage{}
	for i++; ; i++ {
		i = skipJSONSpace(raw, i)
		if i >= len(raw) || raw[i] == ']' {
			return a, true
		}
		start := i
		if i = skipValue(raw, start); i < 0 {
			return nil, false
		}
		a = append(a, raw[start:i:i])
		if i = skipJSONSpace(raw, i); i >= len(raw) || raw[i] != ',' {
			return a, true
		}
	}
}

// plainString is the value of the valid JSON string v when it holds no
// escape and is valid UTF-8, which is then exactly what encoding/json
// reads; ok is false otherwise.
func plainString(v []byte) (string, bool) {
	if jsonKind(v) != '"' {
		return "", false
	}
	i := skipJSONSpace(v, 0)
	content, _, escaped := scanString(v, i)
	if escaped || !utf8.Valid(content) {
		return "", false
	}
	return string(content), true
}

// memberName is key as a string, without allocating for the members of a
// chat reply that every server sends: a map's key must be a string of its
// own, and these were a dozen allocations a reply.
func memberName(key []byte) string {
	switch string(key) { // compared in place, not converted
	case "id":
		return "id"
	case "object":
		return "object"
	case "created":
		return "created"
	case "model":
		return "model"
	case "choices":
		return "choices"
	case "usage":
		return "usage"
	case "system_fingerprint":
		return "system_fingerprint"
	case "index":
		return "index"
	case "message":
		return "message"
	case "finish_reason":
		return "finish_reason"
	case "logprobs":
		return "logprobs"
	case "role":
		return "role"
	case "content":
		return "content"
	case "refusal":
		return "refusal"
	case "tool_calls":
		return "tool_calls"
	case "reasoning_content":
		return "reasoning_content"
	}
	return string(key)
}
