package transport

import (
	"encoding/json"
	"net/http"
)

// bodyView is the one parse of an MCP POST body that every /mcp layer
// reads (era routing, the task-header check, the id check, the session
// cap, cancel-on-disconnect, the direct call paths): whether the body is
// valid JSON, whether it is a batch, and the envelope of each message
// (scanEnvelope). It is made once per POST, on the first layer's read,
// and kept with the buffered body (readBack.view).
//
// Why: each layer used to validate and scan the body again (json.Valid
// and scanEnvelope in exactIDs, the same twice more in oneCall, a
// byte search in taskNameHeader, messages in cancelOnDisconnect), so a
// 2026-07-28 run_prompt POST was validated three times and scanned four
// (docs/benchmarks.md, "The stateless (2026-07-28) path"). Every answer a
// layer derives from the view is the one it derived from the body:
// FuzzBodyViewAnswersAsEachLayer holds them to the per-layer scans they
// replace.
type bodyView struct {
	// valid is json.Valid(body) (validJSON); nothing below is set
	// without it.
	valid bool
	// batch: the body is a JSON array.
	batch bool
	// elems are the body's messages: the body itself, or each element of
	// a batch, in order.
	elems []elemView
	one   [1]elemView // elems' backing for a body of one message

	msgs     []message // messages(), once asked for
	msgsDone bool
}

// elemView is one message of a body: its bytes and its envelope; obj is
// false when it is not a JSON object (scanEnvelope's ok).
type elemView struct {
	raw []byte
	env envelope
	obj bool
}

// scan makes body's view: one validation, one pass over the top-level
// members of each message.
func (v *bodyView) scan(body []byte) {
	if !validJSON(body) {
		return
	}
	v.valid = true
	elem := func(msg []byte) elemView {
		e, ok := scanEnvelope(msg)
		return elemView{raw: msg, env: e, obj: ok}
	}
	i := skipSpace(body, 0)
	if body[i] != '[' {
		v.one[0] = elem(body)
		v.elems = v.one[:]
		return
	}
	v.batch = true
	for i = skipSpace(body, i+1); i < len(body) && body[i] != ']'; {
		end, _ := skipValue(body, i)
		v.elems = append(v.elems, elem(body[i:end]))
		i = skipSpace(body, end)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
}

// single is the body's one message when it is not a batch; false for a
// batch, an invalid body, or a body that is not an object.
func (v *bodyView) single() (*elemView, bool) {
	if !v.valid || v.batch || !v.one[0].obj {
		return nil, false
	}
	return &v.one[0], true
}

// messages is the body's messages, one message or a batch; nil when it
// is neither, or a method does not decode (the SDK answers that itself).
// Made once. Members are read as go-sdk v1.8.0 reads them
// (scanEnvelope): names case-sensitively (its internal/json decoder does
// not fold case) and the last of a repeated name winning. encoding/json
// folds case, so a body carrying "method" and "Method" would be one thing
// here and another to the SDK: an initialize the session cap did not
// count, or a call no disconnect cancelled.
func (v *bodyView) messages() []message {
	if v.msgsDone {
		return v.msgs
	}
	v.msgsDone = true
	if !v.valid {
		return nil
	}
	var out []message
	for i := range v.elems {
		m, ok := v.elems[i].message()
		if !ok {
			return nil
		}
		out = append(out, m)
	}
	v.msgs = out
	return out
}

// message is e as messages reads it; false when it is not an object or
// its method does not decode.
func (e *elemView) message() (message, bool) {
	if !e.obj {
		return message{}, false
	}
	m := message{ID: e.env.id, Params: e.env.params}
	method, ok := e.methodName()
	if !ok {
		return message{}, false
	}
	m.Method = method
	return m, true
}

// methodName is e's method decoded ("" when absent); false when it does
// not decode as a string.
func (e *elemView) methodName() (string, bool) {
	method := e.env.method
	switch {
	case method == nil:
		return "", true
	case plainString(method):
		// The common spelling, without encoding/json's reflection:
		// every layer of the /mcp chain reads the method.
		return string(method[1 : len(method)-1]), true
	}
	var s string
	if json.Unmarshal(method, &s) != nil {
		return "", false
	}
	return s, true
}

// readView is r's body view, the body read (and the view made) by the
// first layer that asks; false means the answer is written (readBody).
func readView(w http.ResponseWriter, r *http.Request) (*bodyView, bool) {
	if _, ok := readBody(w, r); !ok {
		return nil, false
	}
	return r.Body.(*readBack).view(), true
}

// postView hands a request that is not a POST to next and returns false;
// a POST's body view it returns as readView does.
func postView(w http.ResponseWriter, r *http.Request, next http.Handler) (*bodyView, bool) {
	if r.Method != http.MethodPost {
		next.ServeHTTP(w, r)
		return nil, false
	}
	return readView(w, r)
}
