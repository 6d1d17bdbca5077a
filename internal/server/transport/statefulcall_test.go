package transport_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// The real server's tools answer a plain stateful tools/call the same
// through statefulCalls as through the SDK's stateful handler: a result,
// progress before it, a run answering running at its reply deadline, a
// tool's refusal, a JSON-RPC error, an unknown tool. Two handlers serve
// the same server, each with a session of its own; run ids and elapsed
// times, which differ from run to run, are masked.
func TestStatefulCallsOfTheServerAnswerAsTheSDK(t *testing.T) {
	g, c := tcpGateway(t)
	gate := gatewaytest.NewGate()
	defer gate.Release()
	for range 2 {
		g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("eventually")))
	}
	limits := defaultLimits()
	limits.ReplyDeadline = 200 * time.Millisecond
	h := newHarness(t, fixture{limits: limits, opts: withGateway(c),
		prompts: map[string]string{"echo.md": echoPrompt, "summarize.md": summarizePrompt, "trio.md": trioPrompt}})
	opts := transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}}
	taken := &atomic.Int64{}
	direct, err := transport.HTTPHandlerCounting(h.srv.Backend(), opts, taken)
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := transport.HTTPHandlerSDKOnly(h.srv.Backend(), opts)
	if err != nil {
		t.Fatal(err)
	}
	open := func(hd http.Handler) string {
		sid := rawPost(hd, "", initializeBody).Header().Get("Mcp-Session-Id")
		rawPost(hd, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		t.Cleanup(func() {
			req := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Mcp-Session-Id", sid)
			hd.ServeHTTP(httptest.NewRecorder(), req)
		})
		return sid
	}
	directSID, sdkSID := open(direct), open(sdk)
	varying := regexp.MustCompile(`[0-9a-f]{32}|"elapsed_ms\\?":[0-9]+|elapsed_ms: [0-9]+`)
	answer := func(hd http.Handler, sid, body string) string {
		rec := rawPost(hd, sid, body)
		h := rec.Header()
		return varying.ReplaceAllString(strings.Join([]string{rec.Result().Status, h.Get("Content-Type"), h.Get("Cache-Control"), h.Get("Connection"), rec.Body.String()}, "\n"), "…")
	}
	call := func(args string, meta string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_prompt","arguments":` + args + meta + `}}`
	}
	for _, tc := range []struct{ name, body, has string }{
		{"a result", call(`{"prompt":"echo","args":"hi"}`, ""), `"status":"completed"`},
		{"progress", call(`{"prompt":"trio"}`, `,"_meta":{"progressToken":"p"}`), `notifications/progress`},
		{"running at the reply deadline", call(`{"prompt":"summarize"}`, ""), `"status":"running"`},
		{"an unknown prompt", call(`{"prompt":"nope"}`, ""), `"isError":true`},
		{"arguments of the wrong type", call(`{"prompt":7}`, ""), `"error"`},
		{"list_prompts", `{"jsonrpc":"2.0","id":"l","method":"tools/call","params":{"name":"list_prompts","arguments":{}}}`, `echo`},
		{"check_run of an unknown run", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"check_run","arguments":{"run_id":"00000000000000000000000000000000"}}}`, `"isError":true`},
		{"an unknown tool", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, `"error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := taken.Load()
			got, want := answer(direct, directSID, tc.body), answer(sdk, sdkSID, tc.body)
			if got != want {
				t.Errorf("statefulCalls answered\n%s\nthe SDK answers\n%s", got, want)
			}
			if !strings.Contains(got, tc.has) {
				t.Errorf("the answer has no %s:\n%s", tc.has, got)
			}
			if taken.Load() != before+1 {
				t.Error("statefulCalls did not answer the call")
			}
		})
	}
}
