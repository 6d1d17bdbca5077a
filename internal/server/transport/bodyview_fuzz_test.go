package transport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzBodyViewAnswersAsEachLayer holds the one scan of a POST body
// (bodyView) to the answers each /mcp layer got from its own scan of the
// body before: the messages (era routing, the session cap,
// cancel-on-disconnect, statefulCalls.passOn), the id check (exactIDs),
// the task-header check (taskNameHeader, its skip included) and the direct
// call paths' request (oneCall). The layer* functions below are those
// scans as they were at 577ebee.
func FuzzBodyViewAnswersAsEachLayer(f *testing.F) {
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}`,
		`  {"jsonrpc":"2.0","id":1.5,"method":"ping"}  `,
		`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`[1,{"jsonrpc":"2.0","id":1e400,"method":"x"}]`,
		`[]`, `[ ]`, `{}`, `"x"`, `null`, `{"a":`, ``,
		`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"abc","taskId":"def"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tasks\/get","params":{"taskId":"abc"}}`,
		`{"jsonrpc":"2.0","id":7,"\u006dethod":"tasks/cancel","params":{"taskId":"abc"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tasks/update","method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"method":7}`,
		`[{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"abc"}}]`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"é"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":[[[[]]]]}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v := scanBody(body)
		if got, want := v.messages(), layerMessages(body); !reflect.DeepEqual(got, want) {
			t.Fatalf("messages of %q:\n view %#v\n scan %#v", body, got, want)
		}
		gotID, gotProblem := inexactID(v)
		wantID, wantProblem := layerInexactID(body)
		if !bytes.Equal(gotID, wantID) || gotProblem != wantProblem {
			t.Fatalf("inexactID of %q: view (%s, %q), scan (%s, %q)", body, gotID, gotProblem, wantID, wantProblem)
		}
		gotTask, gotOK := taskRequest(v)
		wantTask, wantOK := layerTaskRequest(body)
		if gotOK != wantOK || (gotOK && !reflect.DeepEqual(gotTask, wantTask)) {
			t.Fatalf("task request of %q: view (%#v, %v), scan (%#v, %v)", body, gotTask, gotOK, wantTask, wantOK)
		}
		gotCall, gotOK := v.call()
		wantCall, wantOK := layerCall(body)
		if gotOK != wantOK || (gotOK && !reflect.DeepEqual(gotCall, wantCall)) {
			t.Fatalf("call of %q: view (%#v, %v), scan (%#v, %v)", body, gotCall, gotOK, wantCall, wantOK)
		}
		// A view asked twice answers the same (memoised messages).
		if !reflect.DeepEqual(v.messages(), layerMessages(body)) {
			t.Fatalf("messages of %q changed on the second ask", body)
		}
	})
}

// layerMessages is messages as it scanned the body itself.
func layerMessages(body []byte) []message {
	if !json.Valid(body) {
		return nil
	}
	one := func(msg []byte) (message, bool) {
		e, ok := scanEnvelope(msg)
		if !ok {
			return message{}, false
		}
		m := message{ID: e.id, Params: e.params}
		switch {
		case e.method == nil:
		case plainString(e.method):
			m.Method = string(e.method[1 : len(e.method)-1])
		case json.Unmarshal(e.method, &m.Method) != nil:
			return message{}, false
		}
		return m, true
	}
	var batch []message
	ok := layerEach(body, func(msg []byte) bool {
		m, ok := one(msg)
		batch = append(batch, m)
		return ok
	})
	if !ok {
		return nil
	}
	return batch
}

// layerInexactID is exactIDs' scan of the body.
func layerInexactID(body []byte) (id []byte, problem string) {
	if !json.Valid(body) {
		return nil, ""
	}
	layerEach(body, func(msg []byte) bool {
		if e, ok := scanEnvelope(msg); ok && e.method != nil {
			if p := idProblem(e.id); p != "" {
				id, problem = e.id, p
				return false
			}
		}
		return true
	})
	return id, problem
}

// layerEach calls fn on body (valid JSON) or, for a batch, on each of its
// elements until fn returns false, which it reports.
func layerEach(body []byte, fn func([]byte) bool) bool {
	i := skipSpace(body, 0)
	if body[i] != '[' {
		return fn(body)
	}
	for i = skipSpace(body, i+1); i < len(body) && body[i] != ']'; {
		end, _ := skipValue(body, i)
		if !fn(body[i:end]) {
			return false
		}
		i = skipSpace(body, end)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return true
}

// layerTaskRequest is taskNameHeader's reading of the body: its skip,
// then taskRequest; ok only for a task method.
func layerTaskRequest(body []byte) (taskMessage, bool) {
	if !bytes.Contains(body, []byte(`"tasks/`)) && bytes.IndexByte(body, '\\') < 0 {
		return taskMessage{}, false
	}
	msgs := layerMessages(body)
	if len(msgs) != 1 || bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		return taskMessage{}, false
	}
	m := taskMessage{ID: msgs[0].ID, Method: msgs[0].Method}
	if !isTaskMethod(m.Method) {
		return taskMessage{}, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msgs[0].Params, &params) == nil {
		json.Unmarshal(params["taskId"], &m.TaskID)
	}
	return m, true
}

// layerCall is oneCall's reading of the body.
func layerCall(body []byte) (*jsonrpc.Request, bool) {
	if len(body) == 0 || !json.Valid(body) {
		return nil, false
	}
	if i := skipSpace(body, 0); i >= len(body) || body[i] != '{' {
		return nil, false
	}
	if code, _, _ := requestProblem(body); code != 0 {
		return nil, false
	}
	req, ok := decodeRequest(body)
	if !ok || !req.IsCall() || req.Method != directCallMethod {
		return nil, false
	}
	return req, true
}
