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

// check embeds one text with [retrieval]'s model and fails, naming what
// to do, when the server cannot embed with it.
func TestCheckTriesTheEmbeddingsModel(t *testing.T) {
	g := gatewaytest.New(t)
	path := writeConfig(t, `api_key = "k"`, g.URL(), g.APIKey(), map[string]string{"echo.md": promptText("echo", "return args")})
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("[retrieval]\nembeddings_model = \"nomic-embed-text\"\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	g.RespondEmbeddings(gatewaytest.NewScriptedEmbedder(0).Respond)
	code, out, errOut := call(t, nil, "check", path)
	if code != exitOK || !strings.Contains(out, "embeddings model nomic-embed-text: answers (256 dimensions)") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	g.RespondEmbeddings(func(gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Status(404, `{"error":{"message":"model \"nomic-embed-text\" not found, try pulling it first","type":"api_error"}}`)
	})
	code, _, errOut = call(t, nil, "check", path)
	if code != exitFailure || !strings.Contains(errOut, `the embeddings model "nomic-embed-text" cannot be used`) || !strings.Contains(errOut, "try pulling it first") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}
