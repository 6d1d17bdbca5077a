package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC 2.0 error codes the transport answers with itself, for messages
// the SDK never sees.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// envelope is what the transport needs of one JSON-RPC message: the raw
// bytes of its envelope members, found by one pass over the message
// without decoding params or result (the SDK decodes those once, later).
// A member that is absent is nil.
type envelope struct {
	version, id, method []byte
	result, error       bool
	// depth is the deepest nesting of objects and arrays, the message
	// itself counting 1.
	depth int
}

// maxDepth is go-sdk v1.8.0's nesting limit (internal/json, Unmarshal's
// defaultMaxDepth): a deeper message fails its decoding, which on stdio
// would end the session.
const maxDepth = 1000

// scanEnvelope reads the top-level members of msg, which must already be
// valid JSON (json.Valid); ok is false when msg is not an object.
func scanEnvelope(msg []byte) (e envelope, ok bool) {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return e, false
	}
	i = skipSpace(msg, i+1)
	for i < len(msg) && msg[i] != '}' {
		keyEnd := skipString(msg, i)
		key := msg[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			// "\u0069d" is "id" to the SDK's decoder too: compare the
			// unescaped name (rare, so the slow way).
			var k string
			json.Unmarshal(msg[i:keyEnd], &k)
			key = []byte(k)
		}
		i = skipSpace(msg, keyEnd)
		i = skipSpace(msg, i+1) // the colon
		valEnd, depth := skipValue(msg, i)
		e.depth = max(e.depth, 1+depth)
		val := msg[i:valEnd]
		switch string(key) {
		case "jsonrpc":
			e.version = val
		case "id":
			e.id = val
		case "method":
			e.method = val
		case "result":
			e.result = true
		case "error":
			e.error = true
		}
		i = skipSpace(msg, valEnd)
		if i < len(msg) && msg[i] == ',' {
			i = skipSpace(msg, i+1)
		}
	}
	return e, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i], and
// how deep its objects and arrays nest; b is valid JSON, so only strings
// and nesting need care.
func skipValue(b []byte, i int) (end, maxNest int) {
	if i >= len(b) {
		return i, 0
	}
	switch b[i] {
	case '"':
		return skipString(b, i), 0
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
				maxNest = max(maxNest, depth)
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, maxNest
				}
			}
		}
		return len(b), maxNest
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i, 0
}

// idProblem says what is wrong with a request id, or "" when the SDK will
// answer it under the same id. go-sdk v1.8.0 decodes a numeric id into a
// float64 and converts it to int64 (internal/jsonrpc2/messages.go, MakeID),
// so 1.5 would be answered as 1, 2^70 as -2^63 and 2^53+1 as 2^53: a
// number is accepted only when that conversion gives back its exact value
// (issue #11 item 8; no upstream issue found).
func idProblem(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return ""
	case 'n': // null
		return ""
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || int64(float64(n)) != n {
			return "id " + string(raw) + " is not an integer this server can answer under exactly: use a string id, or an integer between -2^53 and 2^53"
		}
		return ""
	}
	return "id must be a string, an integer or null"
}

// idKey is the identity of a request id as both directions spell it: an
// incoming id the transport passed on, and the id of the SDK's response
// to it. Numbers are passed on only as exact integers (idProblem), which
// the SDK writes back in plain decimal; strings are compared unescaped,
// since the SDK may escape differently from the client. 7 and "7" differ.
func idKey(raw []byte) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		if bytes.IndexByte(raw, '\\') < 0 {
			return string(raw), true
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return strconv.Quote(s), true
	case 'n':
		return "", false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}

// requestProblem checks one line or body that is valid JSON as a single
// JSON-RPC 2.0 message. It returns the envelope, and for a message the
// SDK must not see, the error code, what was wrong, and the id to answer
// under (the raw id when it could be read, else null).
func requestProblem(msg []byte) (e envelope, code int, problem string, replyID []byte) {
	e, ok := scanEnvelope(msg)
	if !ok {
		if skipSpace(msg, 0) < len(msg) && msg[skipSpace(msg, 0)] == '[' {
			return e, codeInvalidRequest, "a JSON-RPC batch (an array) is not accepted: send one message per line", nil
		}
		return e, codeInvalidRequest, "a JSON-RPC message must be a JSON object", nil
	}
	if len(e.id) > 0 && (e.id[0] == '"' || e.id[0] == '-' || (e.id[0] >= '0' && e.id[0] <= '9')) {
		replyID = e.id
	}
	if string(e.version) != `"2.0"` {
		return e, codeInvalidRequest, `"jsonrpc" must be "2.0"`, replyID
	}
	if p := idProblem(e.id); p != "" {
		return e, codeInvalidRequest, p, replyID
	}
	if e.depth > maxDepth {
		return e, codeInvalidRequest, fmt.Sprintf("the message nests objects and arrays deeper than %d levels", maxDepth), replyID
	}
	if e.method != nil && e.method[0] != '"' {
		return e, codeInvalidRequest, `"method" must be a string`, replyID
	}
	if e.method == nil && (!(e.result || e.error) || len(e.id) == 0 || e.id[0] == 'n') {
		return e, codeInvalidRequest, `the message has neither a "method" (a request) nor an "id" with a "result" or "error" (a response)`, replyID
	}
	if e.method == nil || e.error {
		// A response to one of our requests, or a request carrying an
		// "error" member: rare, and the SDK's decoding of "error" is
		// strict (an object with an integer code), so let it judge.
		if _, err := jsonrpc.DecodeMessage(msg); err != nil {
			return e, codeInvalidRequest, "not a JSON-RPC 2.0 message: " + err.Error(), replyID
		}
	}
	return e, 0, "", nil
}

// errorReply is the JSON-RPC error response for a refused message, with
// its trailing newline; id nil is null.
func errorReply(id []byte, code int, message string) []byte {
	if id == nil {
		id = []byte("null")
	}
	msg, _ := json.Marshal(message) // a string always marshals
	out := make([]byte, 0, 64+len(id)+len(msg))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"error":{"code":`...)
	out = strconv.AppendInt(out, int64(code), 10)
	out = append(out, `,"message":`...)
	out = append(out, msg...)
	out = append(out, "}}\n"...)
	return out
}
