package transport

import (
	"bytes"
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

// taskMethodPrefix is how every task method's name starts in a body that
// spells it without escapes (isTaskMethod).
const taskMethodPrefix = `"tasks/`

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
		// SDK's own limit.
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		// A task method's name is spelled "tasks/… in the body, or with an
		// escape: a body with neither, every tools/call of this era, goes
		// on without taskRequest's validation and scan of the whole body
		// (about half of the instructions the /mcp layers spent on a
		// 2026-07-28 run_prompt POST; docs/benchmarks.md, "Backend.Direct
		// on both HTTP paths").
		if !bytes.Contains(body, []byte(taskMethodPrefix)) && bytes.IndexByte(body, '\\') < 0 {
			next.ServeHTTP(w, r)
			return
		}
		// A batch or a body that is not one request is the SDK's to refuse.
		msg, ok := taskRequest(body)
		if !ok || !isTaskMethod(msg.Method) {
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

// taskRequest reads body's id, method and params.taskId as the SDK's
// decoder does (messages; a map for params: exact names, the last of a
// repeated one winning). encoding/json into a struct folds case, so
// {"method":"tasks/get","Method":"ping"} read as ping here would have
// skipped the check the SDK's tasks/get needs. false: not one request.
func taskRequest(body []byte) (taskMessage, bool) {
	msgs := messages(body)
	if len(msgs) != 1 || bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		return taskMessage{}, false
	}
	m := taskMessage{ID: msgs[0].ID, Method: msgs[0].Method}
	// Only a task method's params are read: every 2026-07-28 POST passes
	// here, and decoding a tools/call's arguments into a map was most of
	// this check's cost.
	if !isTaskMethod(m.Method) {
		return m, true
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msgs[0].Params, &params) == nil {
		json.Unmarshal(params["taskId"], &m.TaskID)
	}
	return m, true
}
