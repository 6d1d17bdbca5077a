package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// invalidParams is a -32602 protocol error: the caller's request is wrong
// in a way a model cannot fix by reading a tool result, so it is answered
// as a protocol error (mcp-server §4.9).
func invalidParams(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// internalError is a -32603 protocol error: the server failed, not the
// caller. The SDK sends a plain Go error with code 0, so the code is set
// here.
func internalError(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, a...)}
}

// arguments is a tools/call arguments object whose keys were checked
// against the tool's schema: its members, each key once with its last
// value (as json.Unmarshal into a map keeps a repeated key's). A slice
// searched in order, not a map: a call has a handful of arguments, and
// the map, its group and a string per key were four allocations of every
// call (issue #12).
type arguments []argument

// argument is one member of an arguments object.
type argument struct {
	key []byte
	raw json.RawMessage
}

// get returns key's value and whether it is there.
func (a arguments) get(key string) (json.RawMessage, bool) {
	for _, m := range a {
		if string(m.key) == key {
			return m.raw, true
		}
	}
	return nil, false
}

// set gives key the value raw, replacing an earlier one.
func (a arguments) set(key []byte, raw json.RawMessage) arguments {
	for i := range a {
		if bytes.Equal(a[i].key, key) {
			a[i].raw = raw
			return a
		}
	}
	return append(a, argument{key: key, raw: raw})
}

// unmarshalArguments decodes raw, a JSON object, with encoding/json.
func unmarshalArguments(raw []byte) (arguments, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	a := make(arguments, 0, len(m))
	for k, v := range m {
		a = append(a, argument{key: []byte(k), raw: v})
	}
	return a, nil
}

// parseArguments decodes raw (which may be absent or null: no arguments)
// and refuses keys the tool does not take, naming the first one in byte
// order so the message is the same on every call.
func parseArguments(tool string, raw json.RawMessage, keys []string) (arguments, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, invalidParams("the arguments of %s must be a JSON object", tool)
	}
	args, ok := flatArguments(raw)
	if !ok {
		var err error
		if args, err = unmarshalArguments(raw); err != nil {
			return nil, invalidParams("the arguments of %s are not a valid JSON object: %v", tool, err)
		}
	}
	var unknown []string
	for _, m := range args {
		if !slices.Contains(keys, string(m.key)) {
			unknown = append(unknown, string(m.key))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, invalidParams("%s takes no argument %s; its arguments are %s", tool, strconv.Quote(unknown[0]), strings.Join(keys, ", "))
	}
	return args, nil
}

// required returns a string argument that must be present.
func (a arguments) required(key string) (string, error) {
	raw, ok := a.get(key)
	if !ok {
		return "", invalidParams("%s is required", key)
	}
	return stringValue(key, raw)
}

// optional returns a string argument, "" when absent. An explicit null is
// not absent: it is a value of the wrong type.
func (a arguments) optional(key string) (string, error) {
	raw, ok := a.get(key)
	if !ok {
		return "", nil
	}
	return stringValue(key, raw)
}

// boolean returns a boolean argument, false when absent.
func (a arguments) boolean(key string) (bool, error) {
	raw, ok := a.get(key)
	if !ok {
		return false, nil
	}
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalidParams("%s must be true or false", key)
}

// object returns an object argument, nil when absent; its values are
// decoded as JSON (numbers as float64). An explicit null is the wrong
// type, as for strings.
func (a arguments) object(key string) (map[string]any, error) {
	raw, ok := a.get(key)
	if !ok {
		return nil, nil
	}
	raw = bytes.TrimSpace(raw)
	var m map[string]any
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, invalidParams("%s must be a JSON object", key)
	}
	return m, nil
}

func stringValue(key string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", invalidParams("%s must be a string", key)
	}
	if s, ok := plainString(raw); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalidParams("%s must be a string", key)
	}
	return s, nil
}

// plainString reads a JSON string that has no escapes and is valid UTF-8,
// whose value is then the bytes between its quotes: what json.Unmarshal
// returns for it, without a second scan and reflection on every call's
// prompt and args. Anything else (escapes, invalid UTF-8, which
// json.Unmarshal replaces with U+FFFD, or not a whole string) is left to
// json.Unmarshal.
func plainString(raw []byte) (string, bool) {
	inner, end, ok := plainToken(raw, 0, false)
	if !ok || end != len(raw) || !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

// parseCursor reads a list_prompts or tools/list cursor: "" is the first
// page, anything else a decimal offset.
func parseCursor(c string) (int, error) {
	if c == "" {
		return 0, nil
	}
	// Base 10 ParseUint takes no sign, prefix or underscore, so anything
	// but plain digits is refused here.
	n, err := strconv.ParseUint(c, 10, 31)
	if err != nil {
		return 0, invalidParams("cursor %s is not a valid pagination cursor", strconv.Quote(c))
	}
	return int(n), nil
}

// flatArguments decodes the common arguments object without
// encoding/json, whose validating scan and reflection were the larger
// part of a Lua-only run_prompt's argument handling (docs/benchmarks.md,
// "Answering tools/call without the SDK's types"): an object whose keys
// are printable ASCII without escapes and whose values are strings
// without escapes or control characters, true, false or null, with JSON
// whitespace between. What it accepts is valid JSON, and decodes to what
// json.Unmarshal into arguments gives (a repeated key's last value, each
// value's bytes as they are); anything else reports false and is
// json.Unmarshal's, as is an object of more than maxFlatMembers members.
// FuzzFlatArguments holds the two together.
func flatArguments(raw []byte) (arguments, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	var args arguments
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return args, skipSpace(raw, i+1) == len(raw)
	}
	for {
		key, next, ok := plainToken(raw, i, true)
		if !ok {
			return nil, false
		}
		i = skipSpace(raw, next)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		start := i
		switch {
		case i < len(raw) && raw[i] == '"':
			if _, i, ok = plainToken(raw, i, false); !ok {
				return nil, false
			}
		case bytes.HasPrefix(raw[i:], []byte("true")), bytes.HasPrefix(raw[i:], []byte("null")):
			i += 4
		case bytes.HasPrefix(raw[i:], []byte("false")):
			i += 5
		default:
			return nil, false
		}
		if args == nil {
			// Room for run_prompt's usual members in one allocation.
			args = make(arguments, 0, 4)
		} else if len(args) == maxFlatMembers {
			// set searches the members so far: past a handful of them
			// that is quadratic (640 KB of distinct keys took seconds),
			// so a large object is json.Unmarshal's map, as before.
			return nil, false
		}
		args = args.set(key, json.RawMessage(raw[start:i:i]))
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return args, skipSpace(raw, i+1) == len(raw)
		default:
			return nil, false
		}
	}
}

// maxFlatMembers bounds the members flatArguments decodes: a tool's
// arguments are a handful (run_prompt takes six), and arguments.set
// compares each new key with every earlier one.
const maxFlatMembers = 16

// plainToken reads the string starting at raw[i] (its opening quote)
// that has no escape and no control character (a key: printable ASCII
// only, which json.Unmarshal would not rewrite); it returns the string's
// contents and the index after its closing quote.
func plainToken(raw []byte, i int, key bool) ([]byte, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(raw); j++ {
		c := raw[j]
		switch {
		case c == '"':
			return raw[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || (key && c >= 0x7f):
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}
