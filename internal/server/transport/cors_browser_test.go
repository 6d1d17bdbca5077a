package transport_test

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// corsPage calls /mcp with fetch() as a browser-based MCP client does: an
// initialize with the bearer, a tools/list on the session it opened (so
// the preflight must grant the session and protocol headers), and one
// request without the bearer, whose 401 the page must be able to read.
// It writes what it saw into #result.
var corsPage = template.Must(template.New("page").Parse(`<!doctype html>
<html><body><pre id="result"></pre><script>
(async () => {
  const mcp = {{.MCP}}, token = {{.Token}};
  const out = {};
  const post = (headers, body) => fetch(mcp, {method: "POST", body: JSON.stringify(body),
    headers: Object.assign({"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, headers)});
  try {
    let r = await post({"Authorization": "Bearer " + token},
      {jsonrpc: "2.0", id: 1, method: "initialize", params: {protocolVersion: "2025-11-25", capabilities: {}, clientInfo: {name: "page", version: "1"}}});
    out.initStatus = r.status;
    out.session = r.headers.get("Mcp-Session-Id") || "";
    out.initBody = await r.text();
    const session = {"Authorization": "Bearer " + token, "Mcp-Session-Id": out.session, "Mcp-Protocol-Version": "2025-11-25"};
    r = await post(session, {jsonrpc: "2.0", method: "notifications/initialized"});
    out.initializedStatus = r.status;
    r = await post(session, {jsonrpc: "2.0", id: 2, method: "tools/list"});
    out.listStatus = r.status;
    out.listBody = await r.text();
    r = await post({}, {jsonrpc: "2.0", id: 3, method: "tools/list"});
    out.noBearerStatus = r.status;
    out.challenge = r.headers.get("WWW-Authenticate") || "";
  } catch (e) {
    out.error = String(e);
  }
  document.getElementById("result").textContent = JSON.stringify(out);
})();
</script></body></html>
`))

// pageServer serves corsPage from its own loopback port (another origin
// than the MCP server's), calling the /mcp *mcpURL holds when the page is
// fetched.
func pageServer(t *testing.T, mcpURL *string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		corsPage.Execute(w, map[string]string{"MCP": *mcpURL, "Token": testToken})
	}))
	t.Cleanup(s.Close)
	return s
}

// TestCORS_BrowserPageOnAListedOrigin runs an MCP client in a page of
// another origin (another loopback port) in headless Chromium: listed in
// allowed_origins, it opens a session and reads its replies and headers;
// a page of an origin not listed cannot get a reply at all.
func TestCORS_BrowserPageOnAListedOrigin(t *testing.T) {
	exe := chromium(t)
	// The page's origin must be listed before the server starts, and the
	// server's address is known only once it listens.
	var mcpURL string
	listed := pageServer(t, &mcpURL)
	f := statusFixture()
	f.http = func(o *transport.HTTPOptions) { o.AllowedOrigins = []string{listed.URL} }
	hh := newHTTPHarness(t, f, nil)
	mcpURL = hh.url + "/mcp"
	unlisted := pageServer(t, &mcpURL)

	ctx := headlessBrowser(t, exe)
	run := func(page string) map[string]any {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
			t.Fatalf("page %s: %v", page, err)
		}
		text, err := chromedp.Run(ctx, chromedp.Poll[string](`document.getElementById("result").textContent || false`))
		if err != nil {
			t.Fatalf("page %s wrote no result: %v", page, err)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("page %s wrote %q: %v", page, text, err)
		}
		return out
	}

	got := run(listed.URL)
	if got["error"] != nil {
		t.Fatalf("the listed origin's page could not use /mcp: %v", got)
	}
	if got["initStatus"] != 200.0 || got["session"] == "" || !strings.Contains(fmt.Sprint(got["initBody"]), `"protocolVersion"`) {
		t.Fatalf("initialize from the listed origin's page: %v", got)
	}
	if got["initializedStatus"] != 202.0 || got["listStatus"] != 200.0 || !strings.Contains(fmt.Sprint(got["listBody"]), "run_prompt") {
		t.Fatalf("tools/list on the page's session: %v", got)
	}
	if got["noBearerStatus"] != 401.0 || got["challenge"] != "Bearer" {
		t.Fatalf("without the bearer the page must read a 401 and its challenge: %v", got)
	}

	if got := run(unlisted.URL); got["error"] == nil {
		t.Fatalf("a page of an origin not listed got replies from /mcp: %v", got)
	}
}
