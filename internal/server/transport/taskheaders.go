package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskNameHeader enforces the Tasks extension's routing header (SEP-2663,
// "Streamable HTTP: Routing Headers"; mcp-server §4.12): a tasks/get,
// tasks/update or tasks/cancel sent with the standard headers (protocol
// 2026-07-28 and later) must carry Mcp-Name equal to params.taskId, so an
// intermediary routing on it reaches the server holding the task. go-sdk
// v1.8.0 validates Mcp-Name only for tools/call, resources/read and
// prompts/get (mcp/streamable_headers.go, validateMcpHeaders); the refusal
// here is the one it gives those: HTTP 400 with JSON-RPC -32020. It reads
// the body of a 2026-07-28 request itself and leaves older eras' untouched.
// headerMcpName is the standard header naming a request's target.
const headerMcpName = "Mcp-Name"

// isTaskMethod reports whether method's Mcp-Name is params.taskId.
func isTaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		return true
	}
	return false
}

func taskNameHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The standard headers start with 2026-07-28; protocol versions are
		// dates, so they compare as strings, as the SDK compares them.
		if r.Method != http.MethodPost || r.Header.Get(headerProtocolVersion) < "2026-07-28" {
			next.ServeHTTP(w, r)
			return
		}
		// Capped like every other read of a body here: it runs before the
		// SDK's own limit. The view is the one every later layer reads
		// (bodyView): a body that is not one task request, every
		// tools/call of this era, goes on after a look at its method.
		v, ok := readView(w, r)
		if !ok {
			return
		}
		// A batch or a body that is not one request is the SDK's to refuse.
		msg, ok := taskRequest(v)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		raw := r.Header.Get(headerMcpName)
		name := strings.TrimSpace(raw) // RFC 9110 §5.5: OWS is not part of the value
		var problem string
		switch {
		case raw == "":
			problem = fmt.Sprintf("missing required Mcp-Name header for method %q: set it to params.taskId", msg.Method)
		case name != msg.TaskID:
			problem = fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match params.taskId %q; send the task id in both", name, msg.TaskID)
		default:
			next.ServeHTTP(w, r)
			return
		}
		id := msg.ID
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		reply, _ := json.Marshal(map[string]any{
			"jsonrpc": "2.0",
			"id":      id,
			"error":   map[string]any{"code": mcp.CodeHeaderMismatch, "message": problem},
		})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(reply)
	})
}

// taskMessage is what the Mcp-Name check reads of a request.
type taskMessage struct {
	ID     json.RawMessage
	Method string
	TaskID string
}

// taskRequest reads the id, method and params.taskId of a body that is
// one tasks/get, tasks/update or tasks/cancel request, as the SDK's
// decoder does (bodyView.messages; a map for params: exact names, the last of a
// repeated one winning); false for any other body. encoding/json into a
// struct folds case, so {"method":"tasks/get","Method":"ping"} read as
// ping here would have skipped the check the SDK's tasks/get needs.
func taskRequest(v *bodyView) (taskMessage, bool) {
	e, ok := v.single()
	if !ok {
		return taskMessage{}, false
	}
	// Only a task method's params are read, and its name made a string:
	// every 2026-07-28 POST passes here.
	var method string
	if plainString(e.env.method) {
		if !isTaskMethod(string(e.env.method[1 : len(e.env.method)-1])) {
			return taskMessage{}, false
		}
		method = string(e.env.method[1 : len(e.env.method)-1])
	} else if method, ok = e.methodName(); !ok || !isTaskMethod(method) {
		return taskMessage{}, false
	}
	m := taskMessage{ID: e.env.id, Method: method}
	var params map[string]json.RawMessage
	if json.Unmarshal(e.env.params, &params) == nil {
		json.Unmarshal(params["taskId"], &m.TaskID)
	}
	return m, true
}
