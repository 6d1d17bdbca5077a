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
	version, id, method, params []byte
	result, error               bool
	// plain is false when a member name was escaped or repeated: the
	// SDK's decoder must then judge the message itself.
	plain bool
	// depth is the deepest nesting of objects and arrays, the message
	// itself counting 1.
	depth int
}

// maxDepth is go-sdk v1.8.0's nesting limit (internal/json, Unmarshal's
// defaultMaxDepth): a deeper message fails its decoding, which on stdio
// would end the session.
const maxDepth = 1000

// scanEnvelope reads the top-level members of msg, which must already be
// valid JSON (json.Valid, or validJSON); ok is false when msg is not an object.
func scanEnvelope(msg []byte) (e envelope, ok bool) {
	it, ok := membersOf(msg)
	if !ok {
		return e, false
	}
	e.plain = true
	for {
		key, val, escaped, depth, more := it.next()
		if !more {
			break
		}
		e.plain = e.plain && !escaped
		e.depth = max(e.depth, 1+depth)
		var member *[]byte
		switch string(key) {
		case "jsonrpc":
			member = &e.version
		case "id":
			member = &e.id
		case "method":
			member = &e.method
		case "params":
			member = &e.params
		case "result":
			e.plain = e.plain && !e.result
			e.result = true
		case "error":
			e.plain = e.plain && !e.error
			e.error = true
		}
		if member != nil {
			e.plain = e.plain && *member == nil
			*member = val
		}
	}
	return e, true
}

// members walks the top-level members of one JSON object in place, without
// allocating (a struct, not a callback, so nothing escapes on the hot path).
type members struct {
	b []byte
	i int
}

// membersOf starts a walk over obj, which must be valid JSON; ok is false
// when it is not an object.
func membersOf(obj []byte) (it members, ok bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return it, false
	}
	return members{b: obj, i: skipSpace(obj, i+1)}, true
}

// next returns the next member: its name (unescaped; escaped says the
// spelling had escapes), its raw value, and how deep the value nests;
// more is false after the last.
func (it *members) next() (key, val []byte, escaped bool, depth int, more bool) {
	b, i := it.b, it.i
	if i >= len(b) || b[i] == '}' {
		return nil, nil, false, 0, false
	}
	keyEnd := skipString(b, i)
	key = b[i+1 : keyEnd-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		// "\u0069d" is "id" to the SDK's decoder too: compare the
		// unescaped name (rare, so the slow way).
		var k string
		json.Unmarshal(b[i:keyEnd], &k)
		key, escaped = []byte(k), true
	}
	i = skipSpace(b, keyEnd)
	i = skipSpace(b, i+1) // the colon
	valEnd, depth := skipValue(b, i)
	val = b[i:valEnd]
	i = skipSpace(b, valEnd)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	it.i = i
	return key, val, escaped, depth, true
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

// envelopeProblem checks one message that is valid JSON (a stdio line, a
// POST body's one message) as a single JSON-RPC 2.0 message, before the
// SDK decodes it; e and ok are scanEnvelope's answer for msg. For a
// message the SDK must not see, it returns the error code, what was
// wrong, and the id to answer under (the raw id when it is a string or a
// number, else nil for null).
func envelopeProblem(msg []byte, e envelope, ok bool) (code int, problem string, replyID []byte) {
	if !ok {
		if i := skipSpace(msg, 0); i < len(msg) && msg[i] == '[' {
			return codeInvalidRequest, "a JSON-RPC batch (an array) is not accepted: send one message per line", nil
		}
		return codeInvalidRequest, "a JSON-RPC message must be a JSON object", nil
	}
	if len(e.id) > 0 && (e.id[0] == '"' || e.id[0] == '-' || (e.id[0] >= '0' && e.id[0] <= '9')) {
		replyID = e.id
	}
	switch {
	case string(e.version) != `"2.0"`:
		return codeInvalidRequest, `"jsonrpc" must be "2.0"`, replyID
	case idProblem(e.id) != "":
		return codeInvalidRequest, idProblem(e.id), replyID
	case e.depth > maxDepth:
		return codeInvalidRequest, fmt.Sprintf("the message nests objects and arrays deeper than %d levels", maxDepth), replyID
	case e.method != nil && e.method[0] != '"':
		return codeInvalidRequest, `"method" must be a string`, replyID
	case e.method == nil && (!(e.result || e.error) || len(e.id) == 0 || e.id[0] == 'n'):
		return codeInvalidRequest, `the message has neither a "method" (a request) nor an "id" with a "result" or "error" (a response)`, replyID
	}
	return 0, "", replyID
}

// envelopeRequest builds the SDK's Request from the envelope e of a
// message that passed envelopeProblem, without the SDK's decoder: go-sdk v1.8.0's
// jsonrpc.DecodeMessage (internal/json, Unmarshal) makes a new streaming
// decoder for every message, whose buffer was about 60 KB a call in the
// allocation profile of a stdio call (docs/benchmarks.md). Only the
// common spelling is built here: a request whose member names are plain
// and unique, whose method and string id are plain ASCII without escapes;
// ok is false for anything else (responses included), which the SDK's
// decoder then handles. FuzzStdioFraming checks that the two agree.
func envelopeRequest(e envelope) (req *jsonrpc.Request, ok bool) {
	if !e.plain || e.method == nil || e.result || e.error || !plainString(e.method) {
		return nil, false
	}
	req = &jsonrpc.Request{Method: string(e.method[1 : len(e.method)-1])}
	switch {
	case len(e.id) == 0 || e.id[0] == 'n':
	case e.id[0] == '"':
		if !plainString(e.id) {
			return nil, false
		}
		req.ID, _ = jsonrpc.MakeID(string(e.id[1 : len(e.id)-1]))
	default:
		// envelopeProblem let only integers that float64 holds exactly
		// through; the public constructor takes the float64 the SDK's
		// decoder would have made.
		n, err := strconv.ParseInt(string(e.id), 10, 64)
		if err != nil {
			return nil, false
		}
		req.ID, _ = jsonrpc.MakeID(float64(n))
	}
	if len(e.params) > 0 {
		req.Params = append(json.RawMessage(nil), e.params...)
	}
	return req, true
}

// plainString reports whether raw is a JSON string of printable ASCII
// without escapes, whose value is its bytes between the quotes.
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x7f || c == '\\' || c == '"' {
			return false
		}
	}
	return true
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
