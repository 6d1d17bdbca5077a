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
	"testing/synctest"
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
	s.AddTool(&mcp.Tool{Name: "closer", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 1500 * time.Millisecond})
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 2})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after the close"}}}, nil
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
		{name: "CloseSSEStream", body: toolCall("3", "closer", `{}`, `{"progressToken":7}`), taken: true},
		{name: "CloseSSEStream on a 2025-06-18 session", version: "2025-06-18", headers: map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, body: toolCall("3", "closer", `{}`, `{"progressToken":7}`), taken: true},
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

// The go-sdk client's own stateful calls, with and without a progress
// token, are the ones statefulCalls takes, and the progress reaches the
// client.
func TestGoSDKClientStatefulCallsAreAnsweredDirectly(t *testing.T) {
	taken := &atomic.Int64{}
	h, err := httpHandler(Backend{MCP: statefulServer(make(chan struct{}, 1)), Calls: &Calls{}},
		HTTPOptions{APIKey: "k", AllowedHosts: []string{"127.0.0.1"}}, pathKnobs{taken: taken})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	progress := make(chan float64, 4)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Progress
		},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, token := range []any{nil, "tok"} {
		params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"a": 1}}
		if token != nil {
			params.SetProgressToken(token)
		}
		if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	if n := taken.Load(); n != 2 {
		t.Errorf("%d calls answered directly, want both", n)
	}
	for want := range 2 {
		select {
		case got := <-progress:
			if got != float64(want) {
				t.Errorf("progress %v, want %v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("progress %d never arrived", want)
		}
	}
}

// A session busy only with calls statefulCalls answers is not idle, not
// even during a call longer than SessionIdleTimeout; once nobody uses it
// for SessionIdleTimeout it is closed, as the SDK's timer closed it.
func TestStatefulCallsKeepTheirSessionAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{}, 1)
		srv := statefulServer(started)
		taken := &atomic.Int64{}
		hd, err := httpHandler(Backend{MCP: srv, Calls: &Calls{}}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}}, pathKnobs{taken: taken})
		if err != nil {
			t.Fatal(err)
		}
		post := func(ctx context.Context, sid, body string) *httptest.ResponseRecorder {
			return rawCall(ctx, hd, sid, body)
		}
		bg := context.Background()
		rec := post(bg, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		sid := rec.Header().Get(headerSessionID)
		if sid == "" {
			t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
		}
		post(bg, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		alive := func() bool { return post(bg, sid, `{"jsonrpc":"2.0","id":"p","method":"ping"}`).Code == http.StatusOK }

		// Calls every half timeout, for two timeouts.
		for range 4 {
			time.Sleep(SessionIdleTimeout / 2)
			if rec := post(bg, sid, toolCall("1", "const", `{}`, "")); !strings.Contains(rec.Body.String(), "hello") {
				t.Fatalf("call on a session in use: %d %s", rec.Code, rec.Body)
			}
		}
		// One call longer than the timeout.
		ctx, cancel := context.WithCancel(bg)
		done := make(chan struct{})
		go func() {
			defer close(done)
			post(ctx, sid, toolCall("2", "slow", `{}`, ""))
		}()
		<-started
		time.Sleep(SessionIdleTimeout + time.Minute)
		synctest.Wait()
		if n := taken.Load(); n != 5 {
			t.Fatalf("%d calls answered by statefulCalls, want 5", n)
		}
		cancel()
		<-done
		if !alive() {
			t.Fatal("a session in use was closed as idle")
		}
		time.Sleep(SessionIdleTimeout + time.Second)
		synctest.Wait()
		if alive() {
			t.Fatal("an idle session was not closed")
		}
	})
}

// Whatever the body and protocol header of a POST on an established
// stateful session, the transport answers it as the SDK's stateful
// handler does (status, headers, body), whether statefulCalls takes it or
// not: the two sides get the same sequence of inputs, so the sessions'
// state (a log level, a tool added) stays the same on both.
func FuzzStatefulCallsAnswerAsTheSDK(f *testing.F) {
	for _, seed := range []struct{ body, version string }{
		{toolCall("3", "const", `{}`, ""), "2025-11-25"},
		{toolCall(`"x"`, "progress", `{"a":1}`, `{"progressToken":"t"}`), "2025-11-25"},
		{toolCall("4", "progress", `{}`, `{"progressToken":4}`), "2025-06-18"},
		{toolCall("5", "nope", "", ""), "2025-11-25"},
		{toolCall("6", "typed", `{"n":"x"}`, ""), "2025-11-25"},
		{toolCall("7", "goerror", `{}`, ""), "2025-11-25"},
		{`{"jsonrpc":"2.0","id":"l","method":"logging/setLevel","params":{"level":"debug"}}`, "2025-11-25"},
		{toolCall("8", "logging", `{}`, ""), "2025-11-25"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const","Name":"x"}}`, "2025-11-25"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const","_meta":{"progressToken":1.5}}}`, ""},
	} {
		f.Add(seed.body, seed.version)
	}
	side := func(sdkOnly bool) (http.Handler, string) {
		s := callServer()
		s.RemoveTools("asking") // waits for the client's answer
		type in struct {
			N int `json:"n"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "typed"}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		s.AddTool(&mcp.Tool{Name: "goerror", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("a plain error")
		})
		h, err := httpHandler(Backend{MCP: s, Calls: &Calls{}}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"example.com"}}, pathKnobs{sdkOnly: sdkOnly})
		if err != nil {
			f.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "http://example.com/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		for k, v := range map[string]string{"Authorization": "Bearer k", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"} {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		sid := rec.Header().Get(headerSessionID)
		if sid == "" {
			f.Fatalf("initialize: %d %s", rec.Code, rec.Body)
		}
		f.Cleanup(func() {
			for ss := range s.Sessions() {
				ss.Close()
			}
		})
		return h, sid
	}
	direct, directSID := side(false)
	sdk, sdkSID := side(true)
	f.Fuzz(func(t *testing.T, body, version string) {
		if strings.ContainsAny(version, "\r\n\x00") || version != strings.TrimSpace(version) {
			return // not a header value net/http would deliver as is
		}
		for _, m := range messages([]byte(body)) {
			if m.Method == "initialize" || isTaskMethod(m.Method) {
				return // a second initialize fails the session; tasks are taskNameHeader's
			}
		}
		answer := func(h http.Handler, sid string) (int, http.Header, string) {
			req := httptest.NewRequest(http.MethodPost, "http://example.com/mcp", strings.NewReader(body))
			for k, v := range map[string]string{"Authorization": "Bearer k", "Content-Type": "application/json",
				"Accept": "application/json, text/event-stream", headerSessionID: sid} {
				req.Header.Set(k, v)
			}
			if version != "" {
				req.Header.Set(headerProtocolVersion, version)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code, rec.Header(), rec.Body.String()
		}
		gotCode, gotHeader, gotBody := answer(direct, directSID)
		wantCode, wantHeader, wantBody := answer(sdk, sdkSID)
		for _, k := range []string{"Content-Type", "Cache-Control", "Connection", headerSessionID} {
			if gotHeader.Get(k) != wantHeader.Get(k) {
				t.Errorf("%s: %q, the SDK's %q", k, gotHeader.Get(k), wantHeader.Get(k))
			}
		}
		if gotCode != wantCode || gotBody != wantBody {
			t.Errorf("answered %d %q\nthe SDK answers %d %q", gotCode, gotBody, wantCode, wantBody)
		}
	})
}

// A session that ends some other way than through this handler (here the
// server closes it) is no longer answered by statefulCalls: the SDK's 404
// is the answer, as for any unknown session.
func TestStatefulCallsStopWithTheirSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := statefulServer(make(chan struct{}, 1))
		taken := &atomic.Int64{}
		hd, err := httpHandler(Backend{MCP: srv, Calls: &Calls{}}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}}, pathKnobs{taken: taken})
		if err != nil {
			t.Fatal(err)
		}
		post := func(sid, body string) *httptest.ResponseRecorder { return rawCall(context.Background(), hd, sid, body) }
		sid := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header().Get(headerSessionID)
		if rec := post(sid, toolCall("1", "const", `{}`, "")); rec.Code != http.StatusOK || taken.Load() != 1 {
			t.Fatalf("a call on the live session: %d %s (taken %d)", rec.Code, rec.Body, taken.Load())
		}
		for ss := range srv.Sessions() {
			ss.Close()
		}
		synctest.Wait()
		if rec := post(sid, toolCall("2", "const", `{}`, "")); rec.Code != http.StatusNotFound || taken.Load() != 1 {
			t.Errorf("a call on the closed session: %d %s (taken %d), want the SDK's 404", rec.Code, rec.Body, taken.Load())
		}
	})
}

// rawCall POSTs body to hd on session sid (none when "") at 2025-11-25,
// as a go-sdk client would, and returns what hd answered.
func rawCall(ctx context.Context, hd http.Handler, sid, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Authorization": "Bearer k", "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25"} {
		req.Header.Set(k, v)
	}
	if sid != "" {
		req.Header.Set(headerSessionID, sid)
	}
	rec := httptest.NewRecorder()
	hd.ServeHTTP(rec, req)
	return rec
}
