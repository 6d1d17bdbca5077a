package transport

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statefulServer is callServer with the tools a stateful call needs
// besides: typed arguments the SDK validates, a plain Go error (code 0 on
// the wire until validCodes), and one that waits to be cancelled, telling
// started when it has begun.
func statefulServer(started chan<- struct{}) *mcp.Server {
	s := callServer()
	s.RemoveTools("asking") // a request to the client: see statefulCalls
	type in struct {
		N int `json:"n" jsonschema:"a number"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "typed"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("n", a.N)}}}, nil, nil
	})
	schema := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "goerror", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("a plain error")
	})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return s
}

// statefulSide is one of the two servers compared: its URL, one
// initialized session on it, and what statefulCalls took there.
type statefulSide struct {
	url, session string
	taken        *atomic.Int64
	started      chan struct{}
}

func newStatefulSide(t *testing.T, sdkOnly bool, version string, setLevel bool) *statefulSide {
	t.Helper()
	side := &statefulSide{taken: &atomic.Int64{}, started: make(chan struct{}, 1)}
	h, err := httpHandler(Backend{MCP: statefulServer(side.started), Calls: &Calls{}},
		HTTPOptions{APIKey: "k", AllowedHosts: []string{"127.0.0.1"}}, pathKnobs{sdkOnly: sdkOnly, taken: side.taken})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	side.url = ts.URL + "/mcp"
	init := side.post(t, map[string]string{"Mcp-Protocol-Version": ""},
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if init.status != http.StatusOK || init.session == "" {
		t.Fatalf("initialize: %+v", init)
	}
	side.session = init.session
	side.post(t, map[string]string{"Mcp-Protocol-Version": version}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if setLevel {
		side.post(t, map[string]string{"Mcp-Protocol-Version": version}, `{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"debug"}}`)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, side.url, nil)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set(headerSessionID, side.session)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return side
}

// post sends body on the side's session (none before initialize) with the
// headers the go-sdk client sends, overridden (or, with "", removed) by
// headers.
func (s *statefulSide) post(t *testing.T, headers map[string]string, body string) reply {
	t.Helper()
	return send(t, s.request(t, headers, body))
}

func (s *statefulSide) request(t *testing.T, headers map[string]string, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer k", "Mcp-Protocol-Version": "2025-11-25", headerSessionID: s.session,
	} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return req
}

func toolCall(id, tool, args, meta string) string {
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `"`
	if args != "" {
		body += `,"arguments":` + args
	}
	if meta != "" {
		body += `,"_meta":` + meta
	}
	return body + `}}`
}

// Every tools/call POST statefulCalls answers on an established session
// gets, byte for byte, the SDK's stateful handler's answer: status,
// headers and body, notifications of the call included; what it does not
// take the SDK answers on both sides.
func TestStatefulCallsAnswerAsTheSDK(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  string // the session's; "" is 2025-11-25
		setLevel bool
		headers  map[string]string
		body     string
		taken    bool
	}{
		{name: "result", body: toolCall("3", "const", `{}`, ""), taken: true},
		{name: "no arguments", body: toolCall("3", "const", "", ""), taken: true},
		{name: "string id", body: toolCall(`"a-1"`, "const", `{"x":[1,{"y":null}]}`, ""), taken: true},
		{name: "progress token without progress", body: toolCall("3", "const", `{}`, `{"progressToken":"p"}`), taken: true},
		{name: "progress", body: toolCall("3", "progress", `{}`, `{"progressToken":7}`), taken: true},
		{name: "progress without a token", body: toolCall("3", "progress", `{}`, ""), taken: true},
		{name: "log message at the session's level", setLevel: true, body: toolCall("3", "logging", `{}`, ""), taken: true},
		{name: "log message without a level", body: toolCall("3", "logging", `{}`, ""), taken: true},
		{name: "tool error", body: toolCall("3", "failing", `{}`, ""), taken: true},
		{name: "invalid params error", body: toolCall("3", "invalid", `{}`, ""), taken: true},
		{name: "missing capability error", body: toolCall("3", "capability", `{}`, ""), taken: true},
		{name: "plain Go error", body: toolCall("3", "goerror", `{}`, ""), taken: true},
		{name: "unknown tool", body: toolCall("3", "nope", `{}`, ""), taken: true},
		{name: "typed arguments", body: toolCall("3", "typed", `{"n":3}`, ""), taken: true},
		{name: "bad arguments", body: toolCall("3", "typed", `{"n":"three"}`, ""), taken: true},
		{name: "progress outside the call", body: toolCall("3", "elsewhere", `{}`, `{"progressToken":7}`), taken: true},
		{name: "list_changed mid-call", body: toolCall("3", "changer", `{}`, ""), taken: true},
		{name: "wildcard Accept", headers: map[string]string{"Accept": "*/*"}, body: toolCall("3", "const", `{}`, ""), taken: true},
		{name: "Content-Type with charset", headers: map[string]string{"Content-Type": "application/json; charset=utf-8"}, body: toolCall("3", "const", `{}`, ""), taken: true},
		{name: "2025-06-18 session", version: "2025-06-18", headers: map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, body: toolCall("3", "progress", `{}`, `{"progressToken":"t"}`), taken: true},
		{name: "2025-03-26 session", version: "2025-03-26", headers: map[string]string{"Mcp-Protocol-Version": "2025-03-26"}, body: toolCall("3", "const", `{}`, ""), taken: true},

		{name: "no protocol header", headers: map[string]string{"Mcp-Protocol-Version": ""}, body: toolCall("3", "const", `{}`, "")},
		{name: "header other than the session's", headers: map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, body: toolCall("3", "const", `{}`, "")},
		{name: "unsupported header", headers: map[string]string{"Mcp-Protocol-Version": "2024-01-01"}, body: toolCall("3", "const", `{}`, "")},
		{name: "unknown session", headers: map[string]string{headerSessionID: "nope"}, body: toolCall("3", "const", `{}`, "")},
		{name: "Last-Event-ID", headers: map[string]string{"Last-Event-ID": "x_1"}, body: toolCall("3", "const", `{}`, "")},
		{name: "JSON only accepted", headers: map[string]string{"Accept": "application/json"}, body: toolCall("3", "const", `{}`, "")},
		{name: "text Content-Type", headers: map[string]string{"Content-Type": "text/plain"}, body: toolCall("3", "const", `{}`, "")},
		{name: "batch", body: "[" + toolCall("3", "const", `{}`, "") + "]"},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"const"}}`},
		{name: "arguments not an object", body: toolCall("3", "const", `[1]`, "")},
		{name: "name not a string", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}`},
		{name: "no params", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call"}`},
		{name: "other _meta", body: toolCall("3", "const", `{}`, `{"progressToken":1,"x":2}`)},
		{name: "escaped member", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"n\u0061me":"const"}}`},
		{name: "repeated name", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","name":"const"}}`},
		{name: "2026-07-28 _meta", body: toolCall("3", "const", `{}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)},
		{name: "another method", body: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			version := tc.version
			if version == "" {
				version = "2025-11-25"
			}
			direct := newStatefulSide(t, false, version, tc.setLevel)
			sdk := newStatefulSide(t, true, version, tc.setLevel)
			got := direct.post(t, tc.headers, tc.body)
			want := sdk.post(t, tc.headers, tc.body)
			if got != want {
				t.Errorf("statefulCalls answered\n%+v\nthe SDK answers\n%+v", got, want)
			}
			if taken := direct.taken.Load() > 0; taken != tc.taken {
				t.Errorf("taken by statefulCalls: %v, want %v", taken, tc.taken)
			}
			if n := sdk.taken.Load(); n != 0 {
				t.Errorf("the SDK-only side took %d calls", n)
			}
		})
	}
}

// A call statefulCalls answers is cancelled by a notifications/cancelled
// on another POST of its session, as the SDK's are, and its POST then
// gets what the SDK's gets; an id in flight is refused as the SDK
// refuses it, on both paths.
func TestStatefulCallsCancelAsTheSDK(t *testing.T) {
	run := func(sdkOnly bool) (call, dup, cancel reply, taken int64) {
		side := newStatefulSide(t, sdkOnly, "2025-11-25", false)
		done := make(chan reply, 1)
		go func() {
			resp, err := http.DefaultClient.Do(side.request(t, nil, toolCall("9", "slow", `{}`, `{"progressToken":"s"}`)))
			if err != nil {
				done <- reply{body: err.Error()}
				return
			}
			done <- readReply(t, resp)
		}()
		select {
		case <-side.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow call did not start")
		}
		dup = side.post(t, nil, toolCall("9", "const", `{}`, ""))
		cancel = side.post(t, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"enough"}}`)
		return <-done, dup, cancel, side.taken.Load()
	}
	gotCall, gotDup, gotCancel, taken := run(false)
	wantCall, wantDup, wantCancel, _ := run(true)
	if taken != 1 {
		t.Errorf("statefulCalls took %d calls, want the slow one", taken)
	}
	for _, c := range []struct {
		what      string
		got, want reply
	}{{"the cancelled call", gotCall, wantCall}, {"a call under its id", gotDup, wantDup}, {"the cancellation", gotCancel, wantCancel}} {
		if c.got != c.want {
			t.Errorf("%s: statefulCalls answered\n%+v\nthe SDK answers\n%+v", c.what, c.got, c.want)
		}
	}
}

// readReply is send's reading of a response already received.
func readReply(t *testing.T, resp *http.Response) reply {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return reply{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"),
		resp.Header.Get("Connection"), resp.Header.Get(headerSessionID), b.String()}
}
