package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callServer is a bare SDK server whose tools answer deterministically in
// each of the ways a 2026-07-28 call's reply can go out: a result, a tool
// error, progress before the result, a log message, a JSON-RPC error that
// SEP-2575 maps to an HTTP status, one it does not, and a notification to
// every session (tools/list_changed) in the middle of the call.
func callServer() *mcp.Server {
	s := mcp.NewServer(callImpl(), &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{
		Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{},
	}})
	schema := json.RawMessage(`{"type":"object"}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "const", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("hello"), nil
	})
	s.AddTool(&mcp.Tool{Name: "failing", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "it broke"}
	})
	s.AddTool(&mcp.Tool{Name: "invalid", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad arguments"}
	})
	s.AddTool(&mcp.Tool{Name: "capability", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "declare it"}
	})
	s.AddTool(&mcp.Tool{Name: "progress", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 2 {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i)})
		}
		return text("done"), nil
	})
	s.AddTool(&mcp.Tool{Name: "logging", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "careful"})
		return text("logged"), nil
	})
	s.AddTool(&mcp.Tool{Name: "elsewhere", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Progress sent outside the call's context belongs to no request.
		err := req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
		return text(fmt.Sprint("sent: ", err == nil)), nil
	})
	s.AddTool(&mcp.Tool{Name: "asking", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// A stateless server cannot ask the client anything.
		_, err := req.Session.ListRoots(ctx, nil)
		return text(fmt.Sprint("asked: ", err)), nil
	})
	s.AddTool(&mcp.Tool{Name: "changer", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: "added", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("added"), nil
		})
		return text("changed"), nil
	})
	return s
}

// callImpl is callServer's Implementation (Backend.Impl).
func callImpl() *mcp.Implementation { return &mcp.Implementation{Name: "calls", Version: "1"} }

// statelessCall is a 2026-07-28 tools/call POST as the go-sdk client
// sends it; meta is added to _meta, headers override or (with "") remove.
type statelessCall struct {
	tool    string
	meta    string
	body    string // the whole body instead, when set
	headers map[string]string
}

func (c statelessCall) request(t *testing.T, url string) *http.Request {
	t.Helper()
	body := c.body
	if body == "" {
		body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + c.tool + `","arguments":{},"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}` + c.meta + `}}}`
	}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer k", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": c.tool,
	} {
		req.Header.Set(k, v)
	}
	for k, v := range c.headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return req
}

// reply is what a client sees of an answer.
type reply struct {
	status                            int
	contentType, cache, conn, session string
	body                              string
}

func send(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"),
		resp.Header.Get("Connection"), resp.Header.Get(headerSessionID), string(body)}
}

// directSeen serves h, noting for each request whether statelessCalls
// takes it (directCall) before h sees it.
type directSeen struct {
	h http.Handler
	// standIns counts the calls answered on a stand-in session.
	standIns *atomic.Int64
	mu       sync.Mutex
	// taken and passed count the tools/call requests directCall takes and
	// leaves to the SDK.
	taken, passed int
}

func (d *directSeen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		if _, ok := readBody(w, r); !ok {
			return
		}
		if msgs := messages(r.Body.(*readBack).body); len(msgs) == 1 && msgs[0].Method == directCallMethod {
			_, ok := directCall(r)
			d.mu.Lock()
			if ok {
				d.taken++
			} else {
				d.passed++
			}
			d.mu.Unlock()
		}
	}
	d.h.ServeHTTP(w, r)
}

func (d *directSeen) counts() (taken, passed int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.taken, d.passed
}

func serveCalls(t *testing.T, srv *mcp.Server, direct bool) (*directSeen, string) {
	t.Helper()
	seen := &directSeen{standIns: &atomic.Int64{}}
	h, err := httpHandler(Backend{MCP: srv, Calls: &Calls{}, NoParamHeaders: direct, Impl: callImpl()},
		HTTPOptions{APIKey: "k", AllowedHosts: []string{"127.0.0.1"}}, pathKnobs{standIns: seen.standIns})
	if err != nil {
		t.Fatal(err)
	}
	seen.h = h
	ts := httptest.NewServer(seen)
	t.Cleanup(ts.Close)
	return seen, ts.URL + "/mcp"
}

// Every 2026-07-28 tools/call answered by statelessCalls gets, byte for
// byte, the SDK's stateless handler's answer: status, headers and body;
// what statelessCalls does not take (headers that do not match, a
// _meta without the version, a batch, an escaped member) the SDK answers
// on both paths.
func TestStatelessCallsAnswerAsTheSDK(t *testing.T) {
	srv := callServer()
	direct, directURL := serveCalls(t, srv, true)
	_, sdkURL := serveCalls(t, callServer(), false)
	for _, tc := range []struct {
		name  string
		call  statelessCall
		taken bool
	}{
		{"result", statelessCall{tool: "const"}, true},
		{"progress token without progress", statelessCall{tool: "const", meta: `,"progressToken":"p"`}, true},
		{"progress", statelessCall{tool: "progress", meta: `,"progressToken":7`}, true},
		{"progress without a token", statelessCall{tool: "progress"}, true},
		{"log message", statelessCall{tool: "logging", meta: `,"io.modelcontextprotocol/logLevel":"debug"`}, true},
		{"log message below the level", statelessCall{tool: "logging"}, true},
		{"tool error", statelessCall{tool: "failing"}, true},
		{"invalid params: 400", statelessCall{tool: "invalid"}, true},
		{"missing capability: 400", statelessCall{tool: "capability"}, true},
		{"unknown tool", statelessCall{tool: "nope"}, true},
		{"progress outside the call", statelessCall{tool: "elsewhere", meta: `,"progressToken":7`}, true},
		{"a request to the client", statelessCall{tool: "asking"}, true},
		{"list_changed mid-call", statelessCall{tool: "changer"}, true},
		{"client info", statelessCall{tool: "const", meta: `,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`}, true},
		{"invalid client info", statelessCall{tool: "const", meta: `,"io.modelcontextprotocol/clientInfo":7`}, true},
		{"no client capabilities", statelessCall{body: `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"const","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, tool: "const"}, true},
		{"Mcp-Name mismatch", statelessCall{tool: "const", headers: map[string]string{"Mcp-Name": "other"}}, false},
		{"no Mcp-Name", statelessCall{tool: "const", headers: map[string]string{"Mcp-Name": ""}}, false},
		{"Mcp-Method mismatch", statelessCall{tool: "const", headers: map[string]string{"Mcp-Method": "tools/list"}}, false},
		{"Last-Event-ID", statelessCall{tool: "const", headers: map[string]string{"Last-Event-ID": "x_1"}}, false},
		{"JSON only accepted", statelessCall{tool: "const", headers: map[string]string{"Accept": "application/json"}}, false},
		{"wildcard Accept", statelessCall{tool: "const", headers: map[string]string{"Accept": "*/*"}}, true},
		{"text Content-Type", statelessCall{tool: "const", headers: map[string]string{"Content-Type": "text/plain"}}, false},
		{"Content-Type with charset", statelessCall{tool: "const", headers: map[string]string{"Content-Type": "application/json; charset=utf-8"}}, true},
		{"meta version mismatch", statelessCall{body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`, tool: "const"}, false},
		{"no _meta", statelessCall{body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const"}}`, tool: "const"}, false},
		{"unknown params member", statelessCall{body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const","requestState":7,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, tool: "const"}, false},
		{"escaped name", statelessCall{body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"n\u0061me":"const","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, tool: "const"}, false},
		{"repeated name", statelessCall{body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","name":"const","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, tool: "const"}, false},
		{"batch", statelessCall{body: `[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}]`, tool: "const"}, false},
		{"notification", statelessCall{body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"const","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, tool: "const"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			takenBefore, _ := direct.counts()
			got := send(t, tc.call.request(t, directURL))
			want := send(t, tc.call.request(t, sdkURL))
			if got != want {
				t.Errorf("statelessCalls answered\n%+v\nthe SDK answers\n%+v", got, want)
			}
			takenAfter, _ := direct.counts()
			if taken := takenAfter > takenBefore; taken != tc.taken {
				t.Errorf("taken by statelessCalls: %v, want %v", taken, tc.taken)
			}
		})
	}
	// All 18 taken but the first (which proves the version served) and
	// those serveCall's session must judge: a log level, client info that
	// does not decode, no capabilities.
	if n := direct.standIns.Load(); n != 14 {
		t.Errorf("%d calls answered on a stand-in session, want 14", n)
	}
}

// The go-sdk client's own 2026-07-28 calls, with and without a progress
// token, are the ones statelessCalls takes.
func TestGoSDKClientCallsAreAnsweredDirectly(t *testing.T) {
	{
		seen, url := serveCalls(t, callServer(), true)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{}}, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: protocolStateless})
		if err != nil {
			t.Fatal(err)
		}
		for _, token := range []any{nil, "tok"} {
			params := &mcp.CallToolParams{Name: "const", Arguments: map[string]any{"a": 1}}
			if token != nil {
				params.SetProgressToken(token)
			}
			if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
		}
		cs.Close()
		taken, passed := seen.counts()
		if taken != 2 || passed != 0 {
			t.Errorf("%d calls answered directly, %d by the SDK; want all 2 directly", taken, passed)
		}
	}
}

type bearerTransport struct{}

func (bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer k")
	return http.DefaultTransport.RoundTrip(r)
}

// Whatever the body and Mcp-Name of a 2026-07-28 tools/call POST, the
// transport answers it as the SDK's stateless handler does (status,
// headers, body), whether statelessCalls takes it or not: its reading of
// a body (plain members, the protocol version, the name) never accepts
// what the SDK would refuse or read otherwise.
func FuzzStatelessCallsAnswerAsTheSDK(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, seed := range []struct{ body, name string }{
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const","arguments":{},` + meta + `}}`, "const"},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"invalid",` + meta + `}}`, "invalid"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const","arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "const"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress",` + meta[:len(meta)-1] + `,"progressToken":1}}}`, "progress"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":[]}}}`, "nope"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const","Name":"x",` + meta + `}}`, "const"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"const",` + meta + `,"_meta":{}}}`, "const"},
	} {
		f.Add(seed.body, seed.name)
	}
	direct, err := HTTPHandler(Backend{MCP: callServer(), Calls: &Calls{}, NoParamHeaders: true, Impl: callImpl()}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"example.com"}})
	if err != nil {
		f.Fatal(err)
	}
	opts := &mcp.StreamableHTTPOptions{Stateless: true, Logger: discard(), MaxRequestBodyBytes: maxBodyBytes, DisableLocalhostProtection: true, PropagateRequestCancellation: true}
	ref := callServer()
	sdk := bufferBody(exactIDs(keepAliveSSE(DefaultKeepAlive, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ref }, opts))))
	f.Fuzz(func(t *testing.T, body, name string) {
		if strings.ContainsAny(name, "\r\n\x00") || name != strings.TrimSpace(name) {
			return // not a header value net/http would deliver as is
		}
		for _, m := range messages([]byte(body)) {
			if isTaskMethod(m.Method) {
				return // taskNameHeader's, in front of both (taskheaders.go)
			}
		}
		answer := func(h http.Handler) (int, http.Header, string) {
			req := statelessCall{body: body, tool: name}.request(t, "http://example.com/mcp")
			if name == "" {
				req.Header.Del(headerMcpName)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code, rec.Header(), rec.Body.String()
		}
		gotCode, gotHeader, gotBody := answer(direct)
		wantCode, wantHeader, wantBody := answer(sdk)
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
