package transport_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/server/transport"
)

const (
	listedOrigin   = "http://127.0.0.1:6274"
	unlistedOrigin = "https://evil.example"
)

func corsHarness(t *testing.T) *httpHarness {
	f := statusFixture()
	f.http = func(o *transport.HTTPOptions) { o.AllowedOrigins = []string{listedOrigin, "https://app.example"} }
	return newHTTPHarness(t, f, nil)
}

// corsSent returns r's Access-Control-* headers, which must be absent for
// anything but a listed origin on /mcp.
func corsSent(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out = append(out, k)
		}
	}
	return out
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := noRedirects(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body(t, resp)
}

func preflight(t *testing.T, url, origin string, headers string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodOptions, url, nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	if headers != "" {
		req.Header.Set("Access-Control-Request-Headers", headers)
	}
	return do(t, req)
}

// A listed origin's preflight is answered before the bearer check (a
// browser sends none on it) with what a browser needs to send an MCP
// request: the origin, the methods, the client's headers.
func TestCORS_PreflightFromAListedOrigin(t *testing.T) {
	hh := corsHarness(t)
	resp, _ := preflight(t, hh.url+"/mcp", listedOrigin, "authorization,content-type,mcp-protocol-version,mcp-session-id,mcp-param-region,x-other")
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight from a listed origin without a bearer: %d, want 204", resp.StatusCode)
	}
	if got := h.Get("Access-Control-Allow-Origin"); got != listedOrigin {
		t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, listedOrigin)
	}
	if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Errorf("Vary = %q, want Origin", h.Values("Vary"))
	}
	if got := h.Get("Access-Control-Allow-Methods"); got != "GET, POST, DELETE" {
		t.Errorf("Access-Control-Allow-Methods = %q", got)
	}
	allowed := map[string]bool{}
	for name := range strings.SplitSeq(h.Get("Access-Control-Allow-Headers"), ",") {
		allowed[strings.ToLower(strings.TrimSpace(name))] = true
	}
	for _, want := range []string{"authorization", "content-type", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id", "mcp-method", "mcp-name", "mcp-param-region"} {
		if !allowed[want] {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), want)
		}
	}
	if allowed["x-other"] {
		t.Errorf("Access-Control-Allow-Headers grants a header the transport does not read: %q", h.Get("Access-Control-Allow-Headers"))
	}
	if h.Get("Access-Control-Max-Age") == "" || h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("Max-Age %q, Allow-Credentials %q: want a max age and no credentials", h.Get("Access-Control-Max-Age"), h.Get("Access-Control-Allow-Credentials"))
	}

	// Chromium's Private Network Access: a listed public page calling a
	// loopback server asks for it in the preflight.
	req, _ := http.NewRequest(http.MethodOptions, hh.url+"/mcp", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Private-Network", "true")
	resp, _ = do(t, req)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Private-Network") != "true" || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("private-network preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

// The preflight skips only the bearer: an unlisted origin, or a Host the
// server does not answer to, is refused as any request is, with no grant.
func TestCORS_PreflightRefusals(t *testing.T) {
	hh := corsHarness(t)
	resp, text := preflight(t, hh.url+"/mcp", unlistedOrigin, "authorization")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(text, "Origin is not allowed") || len(corsSent(resp.Header)) > 0 {
		t.Fatalf("preflight from an unlisted origin: %d %q, CORS headers %v; want 403 and none", resp.StatusCode, text, corsSent(resp.Header))
	}
	req, _ := http.NewRequest(http.MethodOptions, hh.url+"/mcp", nil)
	req.Host = "rebound.example"
	req.Header.Set("Origin", listedOrigin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, text = do(t, req)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(text, "Host header is not allowed") || len(corsSent(resp.Header)) > 0 {
		t.Fatalf("preflight with a Host not allowed: %d %q, CORS headers %v; want 403 and none", resp.StatusCode, text, corsSent(resp.Header))
	}
	// The status page and /metrics are same-origin only.
	for _, path := range []string{"/status/", "/metrics"} {
		resp, _ := preflight(t, hh.url+path, listedOrigin, "authorization")
		if resp.StatusCode == http.StatusNoContent || len(corsSent(resp.Header)) > 0 {
			t.Errorf("preflight on %s: %d, CORS headers %v; want no grant", path, resp.StatusCode, corsSent(resp.Header))
		}
	}
}

func postMCP(t *testing.T, url, origin, token string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

// The actual request from a listed origin still needs the bearer; its
// replies, the refusal too, name the origin so the page can read them.
func TestCORS_ActualRequestsFromAListedOrigin(t *testing.T) {
	hh := corsHarness(t)
	check := func(what string, h http.Header) {
		t.Helper()
		if got := h.Get("Access-Control-Allow-Origin"); got != listedOrigin {
			t.Errorf("%s: Access-Control-Allow-Origin = %q, want %q", what, got, listedOrigin)
		}
		exposed := strings.ToLower(h.Get("Access-Control-Expose-Headers"))
		for _, want := range []string{"mcp-session-id", "mcp-protocol-version", "www-authenticate"} {
			if !strings.Contains(exposed, want) {
				t.Errorf("%s: Access-Control-Expose-Headers %q lacks %s", what, exposed, want)
			}
		}
		if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
			t.Errorf("%s: Vary = %q, want Origin", what, h.Values("Vary"))
		}
	}
	resp, text := postMCP(t, hh.url, listedOrigin, "")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("POST from a listed origin without the bearer: %d %q, want 401", resp.StatusCode, text)
	}
	check("401", resp.Header)
	resp, text = postMCP(t, hh.url, listedOrigin, "wrong")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST from a listed origin with a wrong bearer: %d %q, want 401", resp.StatusCode, text)
	}
	resp, text = postMCP(t, hh.url, listedOrigin, testToken)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" || !strings.Contains(text, `"protocolVersion"`) {
		t.Fatalf("initialize from a listed origin: %d %q, session %q", resp.StatusCode, text, resp.Header.Get("Mcp-Session-Id"))
	}
	check("initialize", resp.Header)

	// An unlisted origin is refused without a grant; the server's own
	// origin, and a client with no Origin, need none and get none.
	resp, _ = postMCP(t, hh.url, unlistedOrigin, testToken)
	if resp.StatusCode != http.StatusForbidden || len(corsSent(resp.Header)) > 0 {
		t.Errorf("POST from an unlisted origin: %d, CORS headers %v", resp.StatusCode, corsSent(resp.Header))
	}
	for _, origin := range []string{hh.url, ""} {
		resp, text = postMCP(t, hh.url, origin, testToken)
		if resp.StatusCode != http.StatusOK || len(corsSent(resp.Header)) > 0 {
			t.Errorf("POST with Origin %q: %d %q, CORS headers %v; want 200 and none", origin, resp.StatusCode, text, corsSent(resp.Header))
		}
	}
	// /metrics is not for pages of other origins.
	req, _ := http.NewRequest(http.MethodGet, hh.url+"/metrics", nil)
	req.Header.Set("Origin", listedOrigin)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if resp, _ := do(t, req); len(corsSent(resp.Header)) > 0 {
		t.Errorf("/metrics to a listed origin: CORS headers %v", corsSent(resp.Header))
	}
}
