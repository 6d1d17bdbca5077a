package transport

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTaskMethodsNeedTheirTaskIDInMcpName(t *testing.T) {
	const get = `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"abc"}}`
	for _, tc := range []struct {
		name, version, header, body string
		refused                     bool
	}{
		{"matching", "2026-07-28", "abc", get, false},
		{"matching with surrounding whitespace", "2026-07-28", "  abc ", get, false},
		{"mismatched", "2026-07-28", "other", get, true},
		{"missing", "2026-07-28", "", get, true},
		{"cancel mismatched", "2026-07-28", "other", `{"jsonrpc":"2.0","id":7,"method":"tasks/cancel","params":{"taskId":"abc"}}`, true},
		{"update missing", "2026-07-28", "", `{"jsonrpc":"2.0","id":7,"method":"tasks/update","params":{"taskId":"abc","inputResponses":{}}}`, true},
		{"before the standard headers", "2025-11-25", "", get, false},
		{"another method", "2026-07-28", "", `{"jsonrpc":"2.0","id":7,"method":"tasks/list","params":{}}`, false},
		// Member names are read as the SDK reads them: exactly, the last
		// repeated one winning.
		{"a case-folded method beside the real one", "2026-07-28", "other", `{"jsonrpc":"2.0","id":7,"method":"tasks/get","Method":"ping","params":{"taskId":"abc"}}`, true},
		{"a case-folded taskId beside the real one", "2026-07-28", "other", `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"abc","TaskId":"other"}}`, true},
		// A method spelled with escapes is still the task method it decodes
		// to (the check skips a body only when no task method can be in it).
		{"an escaped slash, mismatched", "2026-07-28", "other", `{"jsonrpc":"2.0","id":7,"method":"tasks\/get","params":{"taskId":"abc"}}`, true},
		{"an escaped letter, missing", "2026-07-28", "", `{"jsonrpc":"2.0","id":7,"method":"\u0074asks/cancel","params":{"taskId":"abc"}}`, true},
		{"a tools/call", "2026-07-28", "run_prompt", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_prompt","arguments":{}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var passed string
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				passed = string(b)
			})
			req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(tc.body))
			req.Header.Set(headerProtocolVersion, tc.version)
			if tc.header != "" {
				req.Header.Set(headerMcpName, tc.header)
			}
			rec := httptest.NewRecorder()
			taskNameHeader(next).ServeHTTP(rec, req)
			if !tc.refused {
				if passed != tc.body || rec.Code != http.StatusOK {
					t.Fatalf("not passed on intact: code %d, body %q", rec.Code, passed)
				}
				return
			}
			var reply struct {
				ID    int `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil || rec.Code != http.StatusBadRequest || passed != "" {
				t.Fatalf("code %d body %q passed %q: %v", rec.Code, rec.Body.String(), passed, err)
			}
			if reply.ID != 7 || reply.Error.Code != -32020 || !strings.Contains(reply.Error.Message, "taskId") {
				t.Fatalf("reply %+v", reply)
			}
		})
	}
}

// The routing-header check reads a 2026-07-28 body before the SDK's own
// size limit applies, so it caps the read itself: an oversized body is
// refused with 413 and never reaches the handler.
func TestTaskNameHeaderCapsTheBody(t *testing.T) {
	reached := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })
	body := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + strings.Repeat("x", maxBodyBytes) + `"}}`)
	req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", body)
	req.Header.Set(headerProtocolVersion, "2026-07-28")
	rec := httptest.NewRecorder()
	taskNameHeader(next).ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || reached {
		t.Fatalf("code %d, handler reached %v; want 413 and not reached", rec.Code, reached)
	}
}
