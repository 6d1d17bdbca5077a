package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// The shipped example's research_person searches through SearXNG with
// nothing but SEARXNG_URL set: a loopback SearXNG answers the recorded
// JSON reply, and the model sees its results in the gateway's shape.
func TestRunTheShippedResearchExampleWithSearxng(t *testing.T) {
	reply, err := os.ReadFile("../../internal/gateway/testdata/search/searxng.json")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		queries []string
	)
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}))
	defer searx.Close()

	g := gatewaytest.New(t)
	g.Enqueue(
		gatewaytest.Calls(gatewaytest.Call{ID: "s1", Name: "search", Args: map[string]any{"query": "Herb Sutter ABI"}}),
		gatewaytest.Text("Herb Sutter chairs the committee.\n\nSources: https://herbsutter.com/2020/02/abi/"),
	)
	env := gatewayEnv(g)
	env["SEARXNG_URL"] = searx.URL
	code, out, errOut := call(t, env, "run", "--config", "../../examples/prompts.toml", "research_person", "Herb Sutter")
	if code != exitOK || !strings.HasPrefix(out, "Herb Sutter chairs the committee.") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queries) != 1 || !strings.HasPrefix(queries[0], "/search?") || !strings.Contains(queries[0], "format=json") || !strings.Contains(queries[0], "q=Herb+Sutter+ABI") {
		t.Fatalf("SearXNG requests %q", queries)
	}
	if n := len(g.SearchRequests()); n != 0 {
		t.Errorf("%d searches went to the gateway", n)
	}
	msgs := g.Requests()[1].Messages
	last, _ := msgs[len(msgs)-1]["content"].(string)
	if !strings.Contains(last, "untrusted_input_") || !strings.Contains(last, `"url":"https://herbsutter.com/2020/02/abi/"`) ||
		!strings.Contains(last, `"description":"Trip report notes`) {
		t.Fatalf("tool result sent as %q", last)
	}
}
