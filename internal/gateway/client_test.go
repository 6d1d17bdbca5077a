package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
)

func TestNewValidatesTheURL(t *testing.T) {
	tests := []struct {
		url      string
		wantErr  string // substring; "" means valid
		wantBase string
	}{
		{url: "http://127.0.0.1:8081/v1", wantBase: "http://127.0.0.1:8081/v1"},
		{url: "https://gw.example:8443/v1/", wantBase: "https://gw.example:8443/v1"},
		{url: "http://gw/v1//", wantBase: "http://gw/v1"},
		{url: "http://gw", wantBase: "http://gw"},
		{url: "", wantErr: "gateway URL is empty"},
		{url: "  ", wantErr: "gateway URL is empty"},
		{url: "ftp://gw/v1", wantErr: `scheme "ftp" is not supported: use http or https`},
		{url: "/v1", wantErr: "has no scheme"},
		{url: "127.0.0.1:8081/v1", wantErr: "cannot be parsed"},
		{url: "http:///v1", wantErr: "has no host"},
		{url: "http://:8081/v1", wantErr: "has no host"},
		{url: "http://user:hunter2@gw/v1", wantErr: "must not contain credentials"},
		{url: "http://gw/v1?key=hunter2", wantErr: "must not have a query"},
		{url: "http://gw/v1?", wantErr: "must not have a query"},
		{url: "http://gw/v1#top", wantErr: "must not have a fragment"},
		{url: "http://gw/v1#", wantErr: "must not have a fragment"},
	}
	for _, tt := range tests {
		c, err := gateway.New(gateway.Options{BaseURL: tt.url, APIKey: secret.MustNew("k")})
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("New(%q): %v", tt.url, err)
			} else if c.BaseURL() != tt.wantBase {
				t.Errorf("New(%q).BaseURL() = %q, want %q", tt.url, c.BaseURL(), tt.wantBase)
			}
			continue
		}
		if err == nil {
			t.Errorf("New(%q) accepted an invalid URL", tt.url)
			continue
		}
		asError(t, err, gateway.KindConfig)
		if !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("New(%q) = %q, want it to mention %q", tt.url, err, tt.wantErr)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("New(%q) error repeats a secret: %q", tt.url, err)
		}
	}
}

func TestNewValidatesTheKeyAndTimeouts(t *testing.T) {
	for _, key := range []string{"", "   ", " hunter2", "hunter2\n", "hun\x00ter2"} {
		_, err := gateway.New(gateway.Options{BaseURL: "http://gw/v1", APIKey: blankOK(key)})
		if err == nil {
			t.Errorf("key %q accepted", key)
			continue
		}
		asError(t, err, gateway.KindConfig)
		if !strings.Contains(err.Error(), "API key") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("key %q: error %q should name the key setting without its value", key, err)
		}
	}
	if _, err := gateway.New(gateway.Options{BaseURL: "http://gw/v1", APIKey: secret.MustNew("k"), Timeout: -1}); err == nil {
		t.Error("negative timeout accepted")
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	const key = "sk-very-secret-key"
	cfg := gateway.Options{BaseURL: "http://gw.example/v1", APIKey: secret.MustNew(key)}
	c, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("boot", "client", c, "config", cfg)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("boot", "client", c, "config", cfg)
	out := fmt.Sprintf("%v %+v %#v %s %q %x %d | %v %+v %#v %s %d | %v", c, c, c, c, c, c, c, cfg, cfg, cfg, cfg, cfg, &cfg) + logged.String()
	if strings.Contains(out, key) || strings.Contains(out, fmt.Sprintf("%x", key)) {
		t.Fatalf("the key leaked:\n%s", out)
	}
	for _, want := range []string{"http://gw.example/v1", "<redacted>"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBearerHeaderOnEveryRequest(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("hello"))
	c := newClient(t, s)
	if _, err := c.Models(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(t.Context(), userTurn("hi")); err != nil {
		t.Fatal(err)
	}
	h := s.Requests()[0].Header
	if got, want := h.Get("Authorization"), "Bearer "+s.APIKey(); got != want {
		t.Errorf("Authorization = %q, want %q", got, want)
	}
	if got := h.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	if h.Get("X-PromptForge-Client") != "" {
		t.Error("the client sent X-PromptForge-Client")
	}
	if s.ModelsCalls() != 1 {
		t.Errorf("models was not reached with the key (calls = %d)", s.ModelsCalls())
	}
}

func TestTrailingSlashTrimmedOnTheWire(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("ok"))
	c := newClient(t, s, func(cfg *gateway.Options) { cfg.BaseURL += "/" })
	// gatewaytest's router does not clean paths, so //chat/completions
	// would be a 404.
	if _, err := c.Complete(t.Context(), userTurn("hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Models(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestWrongKeyIsAStatusError(t *testing.T) {
	s := gatewaytest.New(t)
	c := newClient(t, s, func(cfg *gateway.Options) { cfg.APIKey = secret.MustNew("wrong-key-123") })
	for name, call := range map[string]func() error{
		"models": func() error { _, err := c.Models(t.Context(), nil); return err },
		"chat":   func() error { _, err := c.Complete(t.Context(), userTurn("hi")); return err },
	} {
		err := call()
		ge := asError(t, err, gateway.KindStatus)
		if ge.Status != 401 || ge.Retryable() || !strings.Contains(err.Error(), "check the gateway API key") {
			t.Errorf("%s: %v (status %d, retryable %v)", name, err, ge.Status, ge.Retryable())
		}
		if strings.Contains(err.Error(), "wrong-key-123") {
			t.Errorf("%s: the key leaked into %q", name, err)
		}
	}
}

func TestStatusErrors(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		code      int
		body      string
		msg       string
		retryable bool
		wantBody  string
	}{
		{503, "upstream busy\nline2\x1b[31m", "gateway returned 503 for POST /chat/completions: retry later or check the gateway", true, `upstream busy\nline2\u001b[31m`},
		{500, long, "gateway returned 500 for POST /chat/completions: retry later or check the gateway", true, strings.Repeat("x", 1999) + "…"},
		{502, strings.Repeat("y", 2000), "gateway returned 502 for POST /chat/completions: retry later or check the gateway", true, strings.Repeat("y", 2000)},
		{502, strings.Repeat("y", 1998) + "\x01", "gateway returned 502 for POST /chat/completions: retry later or check the gateway", true, strings.Repeat("y", 1998) + "…"},
		{400, `{"error":{"message":"bad"}}`, `gateway returned 400 for POST /chat/completions: the gateway refused the request; check the model id and the request options: the model server said: "bad"`, false, `{"error":{"message":"bad"}}`},
		{404, "nope", "gateway returned 404 for POST /chat/completions: check that the gateway URL is the API root (it usually ends in /v1) and that the model id is served", false, "nope"},
		{429, "slow down", "gateway returned 429 for POST /chat/completions: the gateway is rate limiting; retry later", true, "slow down"},
	}
	for _, tt := range tests {
		s := gatewaytest.New(t)
		s.Enqueue(gatewaytest.Status(tt.code, tt.body))
		_, err := newClient(t, s).Complete(t.Context(), userTurn("hi"))
		ge := asError(t, err, gateway.KindStatus)
		if err.Error() != tt.msg {
			t.Errorf("%d: Error() = %q\nwant %q", tt.code, err, tt.msg)
		}
		if ge.Status != tt.code || ge.Retryable() != tt.retryable {
			t.Errorf("%d: Status=%d Retryable=%v", tt.code, ge.Status, ge.Retryable())
		}
		if ge.Body() != tt.wantBody {
			t.Errorf("%d: Body() = %q, want %q", tt.code, ge.Body(), tt.wantBody)
		}
		if n := len([]rune(ge.Body())); n > 2000 {
			t.Errorf("%d: Body() has %d chars, cap is 2000", tt.code, n)
		}
		if string(ge.RequestJSON) == "" || !strings.Contains(string(ge.ResponseJSON), tt.body[:4]) {
			t.Errorf("%d: debug capture missing: req=%q resp=%q", tt.code, ge.RequestJSON, ge.ResponseJSON)
		}
	}
}

func TestOversizeBodiesRefused(t *testing.T) {
	huge := strings.Repeat("a", gateway.MaxReplyBytes+1)
	t.Run("success with Content-Length", func(t *testing.T) {
		s := gatewaytest.New(t)
		s.Enqueue(gatewaytest.Malformed(huge))
		_, err := newClient(t, s).Complete(t.Context(), userTurn("hi"))
		if ge := asError(t, err, gateway.KindMalformed); !strings.Contains(err.Error(), "exceeds 16 MiB") || !ge.Retryable() {
			t.Errorf("got %v", err)
		}
	})
	t.Run("success streamed without Content-Length", func(t *testing.T) {
		srv := streamingServer(t, 200, gateway.MaxReplyBytes+1)
		c, err := gateway.New(gateway.Options{BaseURL: srv + "/v1", APIKey: secret.MustNew("k")})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseIdleConnections()
		_, err = c.Models(t.Context(), nil)
		if asError(t, err, gateway.KindMalformed); !strings.Contains(err.Error(), "exceeds 16 MiB") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("error body", func(t *testing.T) {
		srv := streamingServer(t, 502, gateway.MaxReplyBytes+1)
		c, err := gateway.New(gateway.Options{BaseURL: srv + "/v1", APIKey: secret.MustNew("k")})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseIdleConnections()
		_, err = c.Complete(t.Context(), userTurn("hi"))
		ge := asError(t, err, gateway.KindStatus)
		if ge.Status != 502 || len([]rune(ge.Body())) != 2000 || len(ge.ResponseJSON) > 64<<10 {
			t.Errorf("status %d, body %d chars, captured %d bytes", ge.Status, len([]rune(ge.Body())), len(ge.ResponseJSON))
		}
	})
}

// streamingServer answers every request with n bytes of 'a' in chunks, so
// no Content-Length is sent and the client must count while reading.
func streamingServer(t *testing.T, status, n int) string {
	t.Helper()
	s := newRawServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for left := n; left > 0; left -= len(chunk) {
			if left < len(chunk) {
				chunk = chunk[:left]
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	return s
}

func TestNonJSONSuccessIsMalformedNotTransport(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Malformed("<html>proxy error</html>"))
	_, err := newClient(t, s).Complete(t.Context(), userTurn("hi"))
	ge := asError(t, err, gateway.KindMalformed)
	if ge.Status != 200 || !ge.Retryable() || strings.Contains(err.Error(), "proxy error") {
		t.Errorf("got %v (status %d)", err, ge.Status)
	}
	if !strings.Contains(err.Error(), "gateway sent a malformed reply to POST /chat/completions") {
		t.Errorf("message = %q", err)
	}
}

func TestUnreachableGatewayIsTransport(t *testing.T) {
	s := gatewaytest.New(t)
	c := newClient(t, s)
	s.Close()
	_, err := c.Complete(t.Context(), userTurn("hi"))
	ge := asError(t, err, gateway.KindTransport)
	if !ge.Retryable() || ge.Timeout() || !strings.Contains(err.Error(), "check that the gateway is running") {
		t.Errorf("got %v", err)
	}
	if strings.Contains(err.Error(), s.APIKey()) {
		t.Errorf("key in %q", err)
	}
}

func TestHangPastTheTimeoutOnLoopback(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Hang())
	s.SetModelsReply(gatewaytest.Hang())
	// A tiny timeout against a handler that never answers: the test
	// checks the classification, not how long it took.
	c := newClient(t, s, func(cfg *gateway.Options) {
		cfg.Timeout = 20 * time.Millisecond
		cfg.ModelsTimeout = 20 * time.Millisecond
	})
	_, err := c.Complete(t.Context(), userTurn("hi"))
	ge := asError(t, err, gateway.KindTransport)
	if !ge.Timeout() || !ge.Retryable() || !strings.Contains(err.Error(), "timed out after 20ms") {
		t.Errorf("chat: %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("a client timeout must not look like the caller's context ending: %v", err)
	}
	_, err = c.Models(t.Context(), nil)
	if ge := asError(t, err, gateway.KindTransport); !ge.Timeout() || !strings.Contains(err.Error(), "GET /models timed out") {
		t.Errorf("models: %v", err)
	}
}

func TestCancelWhileInFlight(t *testing.T) {
	s := gatewaytest.New(t)
	g := gatewaytest.NewGate()
	defer g.Release()
	s.Enqueue(gatewaytest.Gated(g, gatewaytest.Text("late")))
	c := newClient(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, userTurn("hi"))
		errc <- err
	}()
	<-g.Arrived()
	cancel()
	err := <-errc
	ge := asError(t, err, gateway.KindCancelled)
	if !errors.Is(err, context.Canceled) || ge.Retryable() {
		t.Errorf("got %v (retryable %v)", err, ge.Retryable())
	}
}

func TestPreCancelledContextSendsNothing(t *testing.T) {
	s := gatewaytest.New(t)
	c := newClient(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.Complete(ctx, userTurn("hi"))
	if asError(t, err, gateway.KindCancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", err)
	}
	_, err = c.Models(ctx, nil)
	asError(t, err, gateway.KindCancelled)
	if len(s.Requests()) != 0 || s.ModelsCalls() != 0 {
		t.Error("a request was sent on a cancelled context")
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	cfg, err := gateway.OptionsFromEnv(env(map[string]string{gateway.EnvURL: "http://gw/v1", gateway.EnvAPIKey: "k"}))
	if err != nil || cfg.BaseURL != "http://gw/v1" || cfg.APIKey.Reveal() != "k" {
		t.Fatalf("both set: %+v, %v", cfg, err)
	}
	tests := []struct {
		name         string
		vars         map[string]string
		want         string
		notConfigure bool
	}{
		{"neither", map[string]string{}, "no gateway configured", true},
		{"both empty", map[string]string{gateway.EnvURL: "", gateway.EnvAPIKey: ""}, "no gateway configured", true},
		{"no key", map[string]string{gateway.EnvURL: "http://gw/v1"}, "no gateway configured: PROMPTFORGE_GATEWAY_API_KEY is not set or blank", true},
		{"blank key", map[string]string{gateway.EnvURL: "http://gw/v1", gateway.EnvAPIKey: " \t"}, "no gateway configured: PROMPTFORGE_GATEWAY_API_KEY is not set or blank", true},
		{"no url", map[string]string{gateway.EnvAPIKey: "secret-1"}, "PROMPTFORGE_GATEWAY_URL is not set", false},
		{"blank url", map[string]string{gateway.EnvURL: " ", gateway.EnvAPIKey: "secret-1"}, "PROMPTFORGE_GATEWAY_URL is not set", false},
		{"url not utf-8", map[string]string{gateway.EnvURL: "http://gw/\xff", gateway.EnvAPIKey: "k"}, "PROMPTFORGE_GATEWAY_URL is not valid UTF-8", false},
		{"key not utf-8", map[string]string{gateway.EnvURL: "http://gw/v1", gateway.EnvAPIKey: "secret-\xff"}, "PROMPTFORGE_GATEWAY_API_KEY is not valid UTF-8", false},
	}
	for _, tt := range tests {
		_, err := gateway.OptionsFromEnv(env(tt.vars))
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		asError(t, err, gateway.KindConfig)
		if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret-") {
			t.Errorf("%s: %q, want it to contain %q and no value", tt.name, err, tt.want)
		}
		if errors.Is(err, gateway.ErrNotConfigured) != tt.notConfigure {
			t.Errorf("%s: errors.Is(ErrNotConfigured) = %v", tt.name, !tt.notConfigure)
		}
	}
}

func TestDisabledClient(t *testing.T) {
	c := gateway.NewDisabled("set PROMPTFORGE_GATEWAY_URL and PROMPTFORGE_GATEWAY_API_KEY")
	_, err := c.Complete(t.Context(), userTurn("hi"))
	if asError(t, err, gateway.KindDisabled); !errors.Is(err, gateway.ErrNotConfigured) ||
		err.Error() != "no gateway configured: set PROMPTFORGE_GATEWAY_URL and PROMPTFORGE_GATEWAY_API_KEY" {
		t.Errorf("Complete: %v", err)
	}
	_, err = c.Models(t.Context(), nil)
	asError(t, err, gateway.KindDisabled)
	if got := fmt.Sprint(c); !strings.Contains(got, "disabled") {
		t.Errorf("String() = %q", got)
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	s := gatewaytest.New(t)
	key := s.APIKey()
	s.Enqueue(
		gatewaytest.Status(500, "echoing your key "+key),
		gatewaytest.Malformed("not json "+key),
		gatewaytest.Empty("stop"),
		gatewaytest.Hang(),
	)
	c := newClient(t, s, func(cfg *gateway.Options) { cfg.Timeout = 50 * time.Millisecond })
	for i := range 4 {
		_, err := c.Complete(t.Context(), userTurn("hi"))
		if err == nil {
			t.Fatalf("%d: no error", i)
		}
		if out := fmt.Sprintf("%v %+v %s", err, err, err); strings.Contains(out, key) {
			t.Errorf("%d: key in %q", i, out)
		}
	}
	s.Close()
	_, err := c.Models(t.Context(), nil)
	if err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("transport error %v", err)
	}
}

// blankOK wraps key as a Secret, letting a blank one through as the zero
// Secret (as OptionsFromEnv does), so New's own key checks are what refuse it.
func blankOK(key string) secret.Secret {
	s, _ := secret.New(key)
	return s
}

func TestNewTransportLimits(t *testing.T) {
	tr := gateway.NewTransport()
	defer tr.CloseIdleConnections()
	if tr.MaxIdleConnsPerHost != 64 || tr.DialContext == nil || tr.Proxy == nil {
		t.Errorf("transport: idle/host %d, dial set %v, proxy set %v", tr.MaxIdleConnsPerHost, tr.DialContext != nil, tr.Proxy != nil)
	}
	if tr == gateway.NewTransport() {
		t.Error("NewTransport shares one transport between calls")
	}
}
