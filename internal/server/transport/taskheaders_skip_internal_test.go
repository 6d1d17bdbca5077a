package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// taskNameHeader passes on no body in which taskRequest finds a
// tasks/get, tasks/update or tasks/cancel (escaped spellings included):
// sent without Mcp-Name, every such body is refused.
func FuzzTaskNameHeaderSkip(f *testing.F) {
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"abc"}}`,
		`{"jsonrpc":"2.0","id":7,"method" : "tasks/cancel","params":{"taskId":"abc"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tasks\/get","params":{"taskId":"abc"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"\u0074asks/update","params":{"taskId":"abc"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_prompt","arguments":{}}}`,
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		msg, ok := taskRequest(scanBody([]byte(body)))
		if !ok || len(body) > maxBodyBytes {
			return
		}
		passed := false
		next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true })
		req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
		req.Header.Set(headerProtocolVersion, "2026-07-28")
		rec := httptest.NewRecorder()
		taskNameHeader(next).ServeHTTP(rec, req)
		if passed || rec.Code != http.StatusBadRequest {
			t.Fatalf("a %s without Mcp-Name passed on (%d): %s", msg.Method, rec.Code, body)
		}
	})
}
