package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

const testToken = "s3cret-token"

// httpHarness is a Server served by ServeHTTP on a real listener on
// 127.0.0.1.
type httpHarness struct {
	*harness
	url    string // http://127.0.0.1:port
	cancel context.CancelFunc
	served chan error
}

func newHTTPHarness(t *testing.T, f fixture, hosts []string) *httpHarness {
	t.Helper()
	h := newHarness(t, f)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if hosts == nil {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	hh := &httpHarness{harness: h, url: "http://" + ln.Addr().String(), cancel: cancel, served: make(chan error, 1)}
	opts := transport.HTTPOptions{APIKey: testToken, AllowedHosts: hosts, DrainTimeout: 5 * time.Second, Metrics: h.metrics.Handler(), Status: h.srv.StatusHandler(transport.StatusPath)}
	if f.http != nil {
		f.http(&opts)
	}
	go func() { hh.served <- transport.ServeHTTP(ctx, ln, h.srv.Backend(), opts) }()
	t.Cleanup(func() { hh.stop(t) })
	return hh
}

// stop shuts the server down and waits for ServeHTTP to return.
func (hh *httpHarness) stop(t *testing.T) {
	hh.cancel()
	if err, ok := <-hh.served; ok && err != nil {
		t.Errorf("ServeHTTP: %v", err)
	}
	close(hh.served)
}

// client connects a real go-sdk client over streamable HTTP.
func (hh *httpHarness) client(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	return hh.clientWith(t, opts, false)
}

// clientWith can leave out the standalone GET stream: a test that shuts
// the server down mid-call must not race the client opening it.
func (hh *httpHarness) clientWith(t *testing.T, opts *mcp.ClientOptions, noStandalone bool) *mcp.ClientSession {
	t.Helper()
	return hh.clientAt(t, opts, noStandalone, "")
}

// The two protocol eras /mcp serves, as the go-sdk client asks for them:
// eraStateless is its default (server/discover, no session), eraStateful
// the initialize handshake and a session.
const (
	eraStateless = "2026-07-28"
	eraStateful  = "2025-11-25"
)

// clientAt connects asking for protocol version (the client's newest when
// empty) and fails the test if the server answered with another.
func (hh *httpHarness) clientAt(t *testing.T, opts *mcp.ClientOptions, noStandalone bool, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := hh.connect(t, opts, noStandalone, version)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("asked for protocol %s, the server answered %s", version, got)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connect is clientAt's go-sdk client, its connection failure returned.
func (hh *httpHarness) connect(t *testing.T, opts *mcp.ClientOptions, noStandalone bool, version string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	transport := &mcp.StreamableClientTransport{
		Endpoint:             hh.url + "/mcp",
		HTTPClient:           &http.Client{Transport: servertest.Bearer{Token: testToken, Base: tr}},
		MaxRetries:           -1,
		DisableStandaloneSSE: noStandalone,
	}
	var sessOpts *mcp.ClientSessionOptions
	if version != "" {
		sessOpts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, opts).Connect(context.Background(), transport, sessOpts)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// newGatedHTTPHarness serves one run slot against a gateway whose one
// reply is held at the returned gate, released when the test ends.
func newGatedHTTPHarness(t *testing.T, more ...func(*server.Options)) (*httpHarness, *gatewaytest.Gate) {
	t.Helper()
	g, c := tcpGateway(t)
	gate := gatewaytest.NewGate()
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("too late")))
	t.Cleanup(gate.Release)
	return newHTTPHarness(t, fixture{limits: oneSlot(), opts: func(o *server.Options) {
		withGateway(c)(o)
		for _, f := range more {
			f(o)
		}
	}}, nil), gate
}

// post sends one raw MCP POST.
func post(t *testing.T, ctx context.Context, url, auth, session, body string, host string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		t.Fatal(err)
	}
	return resp
}

func drain(resp *http.Response) {
	if resp != nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func TestBearerAuthentication(t *testing.T) {
	hh := newHTTPHarness(t, fixture{}, nil)
	mcpURL := hh.url + "/mcp"
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"basic with the token", "Basic " + testToken, http.StatusUnauthorized},
		{"basic empty", "Basic ", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"empty bearer", "Bearer ", http.StatusUnauthorized},
		{"a tab instead of the space", "Bearer\t" + testToken, http.StatusUnauthorized},
		{"lowercase scheme", "bearer " + testToken, http.StatusOK},
		{"correct", "Bearer " + testToken, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, context.Background(), mcpURL, tc.auth, "", initializeBody, "")
			defer drain(resp)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == http.StatusUnauthorized {
				if resp.Header.Get("WWW-Authenticate") != "Bearer" {
					t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
				}
				if b, _ := io.ReadAll(resp.Body); strings.TrimSpace(string(b)) != "unauthorized" {
					t.Errorf("body %q", b)
				}
			} else if resp.Header.Get("Mcp-Session-Id") == "" {
				t.Error("the initialize reply has no Mcp-Session-Id: sessions are off")
			}
		})
	}

	// An established session presenting another token is refused.
	resp := post(t, context.Background(), mcpURL, "Bearer "+testToken, "", initializeBody, "")
	session := resp.Header.Get("Mcp-Session-Id")
	drain(resp)
	resp = post(t, context.Background(), mcpURL, "Bearer other", session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "")
	drain(resp)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a session with another token got %d", resp.StatusCode)
	}

	// /healthz needs no token.
	res, err := http.Get(hh.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(b) != `{"status":"serving"}` {
		t.Fatalf("/healthz: %d %s", res.StatusCode, b)
	}
}

func TestHostValidation(t *testing.T) {
	hh := newHTTPHarness(t, fixture{}, []string{"example.com"})
	for _, tc := range []struct {
		host string
		want int
	}{
		{"evil.example.net", http.StatusForbidden},
		{"example.com", http.StatusOK},
		{"EXAMPLE.com:9999", http.StatusOK},
	} {
		resp := post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, "", initializeBody, tc.host)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Host %s: %d, want %d", tc.host, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusForbidden && strings.TrimSpace(string(b)) != "Forbidden: Host header is not allowed" {
			t.Errorf("body %q", b)
		}
	}
	// Host is checked only once the bearer passed.
	resp := post(t, context.Background(), hh.url+"/mcp", "", "", initializeBody, "evil.example.net")
	drain(resp)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated with a bad Host: %d", resp.StatusCode)
	}
}

func TestResolveAllowedHosts(t *testing.T) {
	got, err := transport.ResolveAllowedHosts(netip.MustParseAddrPort("127.0.0.1:9310"), nil)
	if err != nil || !slices.Equal(got, []string{"localhost", "127.0.0.1", "::1"}) {
		t.Fatalf("loopback: %v %v", got, err)
	}
	if got, err = transport.ResolveAllowedHosts(netip.MustParseAddrPort("[::1]:9310"), nil); err != nil || len(got) != 3 {
		t.Fatalf("::1: %v %v", got, err)
	}
	if _, err := transport.ResolveAllowedHosts(netip.MustParseAddrPort("0.0.0.0:9310"), nil); err == nil || !strings.Contains(err.Error(), "allowed_hosts") {
		t.Fatalf("wildcard without hosts: %v", err)
	}
	explicit := []string{"example.com", "example.com:8080"}
	if got, err = transport.ResolveAllowedHosts(netip.MustParseAddrPort("0.0.0.0:8080"), explicit); err != nil || !slices.Equal(got, explicit) {
		t.Fatalf("explicit: %v %v", got, err)
	}
}

func TestHTTPNeedsAToken(t *testing.T) {
	h := newHarness(t, fixture{})
	_, err := transport.HTTPHandler(h.srv.Backend(), transport.HTTPOptions{APIKey: "  ", AllowedHosts: []string{"localhost"}})
	if !errors.Is(err, transport.ErrMissingToken) || !strings.Contains(err.Error(), "[server].api_key") {
		t.Fatalf("got %v", err)
	}
	if transport.DefaultKeepAlive != 15*time.Second {
		t.Fatalf("keep-alive %v, want 15s", transport.DefaultKeepAlive)
	}
}

func TestRunPromptOverHTTPWithProgress(t *testing.T) {
	for _, era := range []string{eraStateless, eraStateful} {
		t.Run(era, func(t *testing.T) {
			hh := newHTTPHarness(t, fixture{prompts: map[string]string{"trio.md": trioPrompt}}, nil)
			frames := make(chan float64, 16)
			cs := hh.clientAt(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				frames <- r.Params.Progress
			}}, false, era)
			params := &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "trio"}}
			params.SetProgressToken(42)
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			if textOf(t, res) != "trio done" {
				t.Fatalf("result %q", textOf(t, res))
			}
			// Frames ride the call's own SSE stream ahead of the response; the
			// client hands notifications to its handler on its own goroutine, so
			// the last one may be delivered just after the result.
			if got := collectFrames(t, frames, 4); !slices.Equal(got, []float64{0, 1, 2, 3}) {
				t.Fatalf("frames %v", got)
			}
		})
	}
}

// One /mcp serves both eras: a client asking for 2026-07-28 gets it without
// a session (server/discover, no handshake), one asking for 2025-11-25 gets
// the initialize handshake and a session, and both run a prompt.
func TestHTTPServesBothProtocolEras(t *testing.T) {
	hh := newHTTPHarness(t, fixture{}, nil)
	for _, era := range []string{eraStateless, eraStateful, "2025-06-18"} {
		t.Run(era, func(t *testing.T) {
			cs := hh.clientAt(t, nil, false, era)
			if hasSession := cs.ID() != ""; hasSession != (era < eraStateless) {
				t.Fatalf("protocol %s: session id %q", era, cs.ID())
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": era}})
			if err != nil || res.IsError || textOf(t, res) != era {
				t.Fatalf("run_prompt at %s: %v %+v", era, err, res)
			}
		})
	}
	// The client's default is the newest version, which it gets.
	if got := hh.client(t, nil).InitializeResult().ProtocolVersion; got != eraStateless {
		t.Fatalf("a client asking for its newest version got %s", got)
	}
}

// A cancelled call frees its slot in both eras: with max_concurrent_runs =
// 1 the next call is admitted (and not refused after the admission wait).
// A 2025-11-25 client cancels with notifications/cancelled on its session;
// a 2026-07-28 client has no session to send it on and drops its POST.
func TestACancelledHTTPCallFreesItsSlot(t *testing.T) {
	for _, era := range []string{eraStateless, eraStateful} {
		t.Run(era, func(t *testing.T) {
			hh, gate := newGatedHTTPHarness(t)
			cs := hh.clientAt(t, nil, false, era)
			if err := cancelMidRun(cs, gate); !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled call returned %v", err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "next"}})
			if err != nil || res.IsError || textOf(t, res) != "next" {
				t.Fatalf("the next call: %v %+v", err, res)
			}
		})
	}
}

// A client that drops its POST without sending notifications/cancelled
// still cancels the run (design §3.1), in both eras: a 2025-11-25 call on
// its session, and a 2026-07-28 request, whose POST is its whole life (no
// session, nothing to send a cancellation on).
func TestADisconnectedHTTPCallCancelsItsRun(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"summarize"}`
	for _, era := range []string{eraStateless, eraStateful} {
		t.Run(era, func(t *testing.T) {
			ended := make(chan runs.Result, 1)
			hh, gate := newGatedHTTPHarness(t, func(o *server.Options) { o.OnTerminal = func(res runs.Result) { ended <- res } })
			mcpURL := hh.url + "/mcp"
			auth := "Bearer " + testToken

			var send func(ctx context.Context) *http.Response
			if era == eraStateful {
				resp := post(t, context.Background(), mcpURL, auth, "", initializeBody, "")
				session := resp.Header.Get("Mcp-Session-Id")
				drain(resp)
				drain(post(t, context.Background(), mcpURL, auth, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""))
				send = func(ctx context.Context) *http.Response { return post(t, ctx, mcpURL, auth, session, call+`}}`, "") }
			} else {
				send = func(ctx context.Context) *http.Response {
					body := call + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
					req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(body))
					if err != nil {
						t.Error(err)
						return nil
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Authorization", auth)
					req.Header.Set("Mcp-Protocol-Version", era)
					req.Header.Set("Mcp-Method", "tools/call")
					req.Header.Set("Mcp-Name", "run_prompt")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						return nil
					}
					return resp
				}
			}

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Read until the connection is dropped under us.
				drain(send(ctx))
			}()
			select {
			case <-gate.Arrived():
			case <-done:
				t.Fatal("the call was answered before its run reached the gateway")
			}
			cancel()
			<-done

			// The slot comes back once the run has stopped; a leaked run would
			// hold it for the whole admission wait and this would be refused.
			slot, err := hh.srv.Registry().Admit(context.Background())
			if err != nil {
				t.Fatalf("the dropped call's run kept its slot: %v", err)
			}
			slot.Release()
			// The slot comes back as the run stops, a moment before its
			// record is final: wait for the record, then read it.
			if res := <-ended; res.Status != runs.StatusFailed {
				t.Fatalf("the dropped call's run ended %+v, want failed", res)
			}
		})
	}
}

func TestMetricsEndpoint(t *testing.T) {
	hh := newHTTPHarness(t, fixture{}, nil)
	cs := hh.client(t, nil)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "echo"}}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, hh.url+"/metrics", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %v %v", resp, err)
	} else {
		drain(resp)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		"promptforge_runs_started_total 1",
		`promptforge_runs_finished_total{status="completed"} 1`,
		`promptforge_runs_finished_total{status="failed"} 0`,
		"promptforge_admissions_refused_total 0",
		"promptforge_runs_in_flight 0",
		"promptforge_admissions_waiting 0",
		"# TYPE promptforge_runs_started_total counter",
		"# TYPE promptforge_run_slots_free gauge",
		`promptforge_run_duration_seconds_count{status="completed"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestOversizedBodyIsRefused(t *testing.T) {
	hh := newHTTPHarness(t, fixture{}, nil)
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", transport.MaxBodyBytes) + `"}}`
	resp := post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, "", big, "")
	drain(resp)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
}

// A graceful shutdown lets a call in flight answer, then closes the
// sessions and returns, in both eras (a 2026-07-28 call's throwaway
// session must not be closed under the reply it is writing).
func TestShutdownDrainsCallsInFlight(t *testing.T) {
	for _, era := range []string{eraStateless, eraStateful} {
		t.Run(era, func(t *testing.T) {
			g, c := tcpGateway(t)
			gate := gatewaytest.NewGate()
			g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("drained")))
			defer gate.Release()
			hh := newHTTPHarness(t, fixture{opts: withGateway(c)}, nil)
			cs := hh.clientAt(t, nil, true, era)
			type reply struct {
				res *mcp.CallToolResult
				err error
			}
			got := make(chan reply, 1)
			go func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "summarize"}})
				got <- reply{res, err}
			}()
			<-gate.Arrived()
			hh.cancel() // the shutdown signal
			gate.Release()
			r := <-got
			if r.err != nil || textOf(t, r.res) != "drained" {
				t.Fatalf("the call in flight: %v %+v", r.err, r.res)
			}
			if err := <-hh.served; err != nil {
				t.Fatalf("ServeHTTP: %v", err)
			}
			hh.served <- nil // for the cleanup's stop
			if _, err := http.Get(hh.url + "/healthz"); err == nil {
				t.Fatal("the listener still accepts after shutdown")
			}
		})
	}
}

// An open standalone SSE stream does not hold a shutdown up: the sessions
// are closed once no call is in flight, which ends the stream.
func TestShutdownEndsOpenEventStreams(t *testing.T) {
	hh := newHTTPHarness(t, fixture{}, nil)
	mcpURL := hh.url + "/mcp"
	auth := "Bearer " + testToken
	resp := post(t, context.Background(), mcpURL, auth, "", initializeBody, "")
	session := resp.Header.Get("Mcp-Session-Id")
	drain(resp)
	drain(post(t, context.Background(), mcpURL, auth, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""))

	req, _ := http.NewRequest(http.MethodGet, mcpURL, nil)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("open the event stream: %v %v", err, stream)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		io.Copy(io.Discard, stream.Body)
		stream.Body.Close()
	}()

	hh.cancel()
	select {
	case err := <-hh.served:
		hh.served <- err
	case <-time.After(20 * time.Second):
		t.Fatal("ServeHTTP is still waiting on an open event stream")
	}
	<-ended
}

// A hostile or broken caller gets its clear answer and the run another
// caller has in flight is unaffected.
func TestAHostileCallerCannotHurtOtherRuns(t *testing.T) {
	g, c := tcpGateway(t)
	gate := gatewaytest.NewGate()
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("undisturbed")))
	defer gate.Release()
	hh := newHTTPHarness(t, fixture{opts: withGateway(c)}, nil)
	victim := hh.client(t, nil)
	type reply struct {
		res *mcp.CallToolResult
		err error
	}
	got := make(chan reply, 1)
	go func() {
		res, err := victim.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "summarize"}})
		got <- reply{res, err}
	}()
	<-gate.Arrived()

	mcpURL, auth := hh.url+"/mcp", "Bearer "+testToken
	resp := post(t, context.Background(), mcpURL, auth, "", initializeBody, "")
	session := resp.Header.Get("Mcp-Session-Id")
	drain(resp)
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call",`, http.StatusBadRequest},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","input_file":"/etc/passwd"}}}`, http.StatusOK},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":{"$ne":1}}}}`, http.StatusOK},
		{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"../../etc","arguments":{}}}`, http.StatusOK},
		// The SDK refuses an unknown method at the HTTP layer.
		{`{"jsonrpc":"2.0","id":12,"method":"no/such/method"}`, http.StatusBadRequest},
	} {
		resp := post(t, context.Background(), mcpURL, auth, session, tc.body, "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.body, resp.StatusCode, tc.want, b)
		}
		if tc.want == http.StatusOK && !strings.Contains(string(b), `"error"`) && !strings.Contains(string(b), `"isError":true`) {
			t.Errorf("%s: answer %s is neither an error nor an error result", tc.body, b)
		}
	}
	if st := hh.srv.Registry().Stats(); st.InFlight != 1 {
		t.Fatalf("stats %+v: the hostile calls started runs", st)
	}

	gate.Release()
	r := <-got
	if r.err != nil || r.res.IsError || textOf(t, r.res) != "undisturbed" {
		t.Fatalf("the other caller's run: %v %+v", r.err, r.res)
	}
}
