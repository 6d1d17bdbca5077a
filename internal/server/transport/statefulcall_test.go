package transport_test

import (
	"context"
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
// through statefulCalls (the built-in tools through Backend.Direct) as
// through the SDK's stateful handler: a result, progress before it, a run
// answering running at its reply deadline, a tool's refusal, a JSON-RPC
// error, an unknown tool. Two handlers serve the same server, each with a
// session of its own; run ids and elapsed times, which differ from run to
// run, are masked.
func TestStatefulCallsOfTheServerAnswerAsTheSDK(t *testing.T) {
	h := serverOfTheCalls(t)
	opts := transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}}
	taken := &atomic.Int64{}
	b, directs := countingDirect(h.srv.Backend())
	direct, err := transport.HTTPHandlerCounting(b, opts, taken)
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := transport.HTTPHandlerSDKOnly(h.srv.Backend(), opts)
	if err != nil {
		t.Fatal(err)
	}
	directSID, sdkSID := openRecordedSession(t, direct), openRecordedSession(t, sdk)
	for _, tc := range serverCalls("") {
		t.Run(tc.name, func(t *testing.T) {
			before, directBefore := taken.Load(), directs.Load()
			got, want := maskedAnswer(rawPost(direct, directSID, tc.body)), maskedAnswer(rawPost(sdk, sdkSID, tc.body))
			tc.check(t, got, want)
			if taken.Load() != before+1 {
				t.Error("statefulCalls did not answer the call")
			}
			if byDirect := directs.Load() > directBefore; byDirect != tc.direct {
				t.Errorf("answered by Backend.Direct: %v, want %v", byDirect, tc.direct)
			}
		})
	}
}

// The same calls at 2026-07-28, stateless: statelessCalls' stand-in
// sessions (the built-in tools through Backend.Direct) answer them as the
// SDK's stateless handler does, status, headers and bytes.
func TestStatelessCallsOfTheServerAnswerAsTheSDK(t *testing.T) {
	h := serverOfTheCalls(t)
	opts := transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}}
	b, directs := countingDirect(h.srv.Backend())
	direct, err := transport.HTTPHandler(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Without the NoParamHeaders promise every 2026-07-28 request is the
	// SDK's stateless handler's.
	sdkBackend := h.srv.Backend()
	sdkBackend.NoParamHeaders = false
	sdkBackend.Direct = nil
	sdk, err := transport.HTTPHandler(sdkBackend, opts)
	if err != nil {
		t.Fatal(err)
	}
	const meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	// The first call goes through the SDK's session (it proves the server
	// serves 2026-07-28); the stand-in sessions answer from the second.
	warm := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_prompts","arguments":{}` + meta + `}}}`
	statelessPost(direct, "list_prompts", warm)
	for _, tc := range serverCalls(meta) {
		t.Run(tc.name, func(t *testing.T) {
			name := regexp.MustCompile(`"name":"([^"]*)"`).FindStringSubmatch(tc.body)[1]
			directBefore := directs.Load()
			got, want := maskedAnswer(statelessPost(direct, name, tc.body)), maskedAnswer(statelessPost(sdk, name, tc.body))
			tc.check(t, got, want)
			if byDirect := directs.Load() > directBefore; byDirect != tc.direct {
				t.Errorf("answered by Backend.Direct: %v, want %v", byDirect, tc.direct)
			}
		})
	}
}

// serverOfTheCalls is the server serverCalls call: the echo, summarize
// (its two model calls held until the test ends, so that the run is
// running at its reply deadline) and trio prompts.
func serverOfTheCalls(t *testing.T) *harness {
	return heldRunsHarness(t, 2, 200*time.Millisecond,
		map[string]string{"echo.md": echoPrompt, "summarize.md": summarizePrompt, "trio.md": trioPrompt})
}

// heldRunsHarness is a server of prompts whose first `held` model calls
// answer "eventually" only when the test ends, so that a run making them
// is still running at the reply deadline.
func heldRunsHarness(t *testing.T, held int, deadline time.Duration, prompts map[string]string) *harness {
	t.Helper()
	g, c := tcpGateway(t)
	gate := gatewaytest.NewGate()
	t.Cleanup(gate.Release)
	for range held {
		g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("eventually")))
	}
	limits := defaultLimits()
	limits.ReplyDeadline = deadline
	return newHarness(t, fixture{limits: limits, opts: withGateway(c), prompts: prompts})
}

// serverCall is one tools/call of the built-in tools: its body, what its
// answer has, and whether Backend.Direct answers it.
type serverCall struct {
	name, body, has string
	direct          bool
}

// check compares the answer got with the SDK's, want.
func (tc serverCall) check(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("answered\n%s\nthe SDK answers\n%s", got, want)
	}
	if !strings.Contains(got, tc.has) {
		t.Errorf("the answer has no %s:\n%s", tc.has, got)
	}
}

// serverCalls are the calls of the two tests above; meta opens the
// params' _meta with its members (and is closed here), "" for none.
func serverCalls(meta string) []serverCall {
	withMeta := func(members string) string {
		switch {
		case meta == "" && members == "":
			return ""
		case meta == "":
			return `,"_meta":{` + members + `}`
		case members == "":
			return meta + `}`
		}
		return meta + `,` + members + `}`
	}
	call := func(id, tool, args, members string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + withMeta(members) + `}}`
	}
	return []serverCall{
		{"a result", call("5", "run_prompt", `{"prompt":"echo","args":"hi"}`, ""), `"status":"completed"`, true},
		{"progress", call("5", "run_prompt", `{"prompt":"trio"}`, `"progressToken":"p"`), `notifications/progress`, true},
		{"running at the reply deadline", call("5", "run_prompt", `{"prompt":"summarize"}`, ""), `"status":"running"`, true},
		{"an unknown prompt", call("5", "run_prompt", `{"prompt":"nope"}`, ""), `"isError":true`, true},
		{"arguments of the wrong type", call("5", "run_prompt", `{"prompt":7}`, ""), `"error"`, true},
		{"list_prompts", call(`"l"`, "list_prompts", `{}`, ""), `echo`, true},
		{"check_run of an unknown run", call("6", "check_run", `{"run_id":"00000000000000000000000000000000"}`, ""), `"isError":true`, true},
		{"an unknown tool", call("7", "nope", `{}`, ""), `"error"`, false},
	}
}

// maskedAnswer is a recorded answer's status, headers and body, with the
// run ids and elapsed times, which differ from run to run, masked.
func maskedAnswer(rec *httptest.ResponseRecorder) string {
	h := rec.Header()
	return varyingInAnswers.ReplaceAllString(strings.Join([]string{rec.Result().Status, h.Get("Content-Type"), h.Get("Cache-Control"), h.Get("Connection"), rec.Body.String()}, "\n"), "…")
}

var varyingInAnswers = regexp.MustCompile(`[0-9a-f]{32}|"elapsed_ms\\?":[0-9]+|elapsed_ms: [0-9]+`)

// statelessPost posts a 2026-07-28 tools/call of tool, with the headers
// the go-sdk client sends.
func statelessPost(hd http.Handler, tool, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	for k, v := range map[string]string{
		"Authorization": "Bearer " + testToken, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool,
	} {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	hd.ServeHTTP(rec, req)
	return rec
}

// countingDirect is b with its Backend.Direct counting the calls it
// answers.
func countingDirect(b transport.Backend) (transport.Backend, *atomic.Int64) {
	n := &atomic.Int64{}
	inner := b.Direct
	b.Direct = func(ctx context.Context, call transport.DirectCall) (transport.DirectReply, bool) {
		d, ok := inner(ctx, call)
		if ok {
			n.Add(1)
		}
		return d, ok
	}
	return b, n
}

// openRecordedSession opens an initialized stateful session on hd, deleted when
// the test ends.
func openRecordedSession(t testing.TB, hd http.Handler) string {
	return openRecordedSessionWith(t, hd, initializeBody)
}

// openRecordedSessionWith is openRecordedSession with init as the
// initialize request.
func openRecordedSessionWith(t testing.TB, hd http.Handler, init string) string {
	sid := rawPost(hd, "", init).Header().Get("Mcp-Session-Id")
	rawPost(hd, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	t.Cleanup(func() {
		req := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Mcp-Session-Id", sid)
		hd.ServeHTTP(httptest.NewRecorder(), req)
	})
	return sid
}
