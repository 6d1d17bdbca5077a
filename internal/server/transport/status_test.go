package transport_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/runtrace"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// brokenPrompt has no description, so the catalog lists it broken with
// the reason.
const brokenPrompt = "---\nname: broken\npromptforge: 1\n---\n# Broken\n"

func statusFixture(more ...func(*server.Options)) fixture {
	return fixture{
		prompts: map[string]string{"echo.md": echoPrompt, "summarize.md": summarizePrompt, "broken.md": brokenPrompt},
		opts: func(o *server.Options) {
			o.Tracing = &runtrace.Options{}
			for _, f := range more {
				f(o)
			}
		},
	}
}

// noRedirects is a client that reports redirects instead of following them.
func noRedirects(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStatus_WithoutTheTokenServesNoData(t *testing.T) {
	hh := newHTTPHarness(t, statusFixture(), nil)
	c := noRedirects(t)
	for _, path := range []string{"/status/", "/status/runs/abc", "/status/style.css"} {
		resp, err := c.Get(hh.url + path)
		if err != nil {
			t.Fatal(err)
		}
		text := body(t, resp)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/status/login" {
			t.Fatalf("GET %s: %d to %q, want 303 to the login form", path, resp.StatusCode, resp.Header.Get("Location"))
		}
		if strings.Contains(text, "broken") || strings.Contains(text, "summarize") {
			t.Fatalf("GET %s without a token served data: %s", path, text)
		}
	}
	resp, err := c.Get(hh.url + "/status/runs/abc.json")
	if err != nil {
		t.Fatal(err)
	}
	if text := body(t, resp); resp.StatusCode != http.StatusUnauthorized || strings.Contains(text, "{") {
		t.Fatalf("trace JSON without a token: %d %s", resp.StatusCode, text)
	}
	// A wrong cookie is no better than none.
	req, _ := http.NewRequest(http.MethodGet, hh.url+"/status/", nil)
	req.AddCookie(&http.Cookie{Name: "promptforge_status", Value: testToken})
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body(t, resp); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a cookie holding the raw token let the request in: %d", resp.StatusCode)
	}
}

func TestStatus_LoginSetsAStrictHttpOnlyCookie(t *testing.T) {
	hh := newHTTPHarness(t, statusFixture(), nil)
	c := noRedirects(t)
	resp, err := c.PostForm(hh.url+"/status/login", url.Values{"token": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := body(t, resp); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || !strings.Contains(text, "not the server&#39;s token") {
		t.Fatalf("wrong token: %d %v %s", resp.StatusCode, resp.Cookies(), text)
	}
	resp, err = c.PostForm(hh.url+"/status/login", url.Values{"token": {testToken}})
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, cookies)
	}
	ck := cookies[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/status" || strings.Contains(ck.Value, testToken) {
		t.Fatalf("cookie = %+v", ck)
	}
	req, _ := http.NewRequest(http.MethodGet, hh.url+"/status/", nil)
	req.AddCookie(ck)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if text := body(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(text, "broken") || !strings.Contains(text, "description") {
		t.Fatalf("status page with the cookie: %d\n%s", resp.StatusCode, text)
	}
	// The bearer header opens it too, for scripts; another Host does not.
	req, _ = http.NewRequest(http.MethodGet, hh.url+"/status/", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Host = "evil.example"
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body(t, resp); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another Host: %d", resp.StatusCode)
	}
}

func TestStatus_TraceJSONToTheBearer(t *testing.T) {
	hh := newHTTPHarness(t, statusFixture(), nil)
	cs := hh.client(t, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.StructuredContent.(map[string]any)["run_id"].(string)
	req, _ := http.NewRequest(http.MethodGet, hh.url+"/status/runs/"+id+".json", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := noRedirects(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	text := body(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
		!strings.Contains(text, `"run_id":"`+id+`"`) || !strings.Contains(text, `"kind":"section"`) {
		t.Fatalf("trace JSON: %d %s", resp.StatusCode, text)
	}
}

// The login form is a page of this server, so a browser posts it with the
// server's own Origin; listing other origins (allowed_origins) must not
// lock the operator out of the status page. An origin neither own nor
// listed is still refused.
func TestStatus_LoginFormWorksWithAllowedOrigins(t *testing.T) {
	f := statusFixture()
	f.http = func(o *transport.HTTPOptions) { o.AllowedOrigins = []string{"https://app.example"} }
	hh := newHTTPHarness(t, f, nil)
	c := noRedirects(t)
	post := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, hh.url+"/status/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body(t, resp)
		return resp
	}
	if resp := post(hh.url); resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login from the server's own page with allowed_origins set: %d %v, want 303 and the cookie", resp.StatusCode, resp.Cookies())
	}
	if resp := post("https://app.example"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login from a listed origin: %d", resp.StatusCode)
	}
	if resp := post("https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login from an origin neither own nor listed: %d, want 403", resp.StatusCode)
	}
}
