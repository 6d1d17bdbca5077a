package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// retrievalPrompts are phrased so that a synonym shares no word with the
// prompt it means: only embeddings can bind "condense this article".
var retrievalPrompts = map[string]string{
	"summarize.md": luaPrompt("summarize", "Summarize a document.", "return args"),
	"translate.md": luaPrompt("translate", "Translate text into another language.", "return args"),
	"weather.md":   luaPrompt("weather", "Get the weather forecast for a city.", "return args"),
}

// retrievalConfig writes a configuration for g's gateway with a
// [retrieval] table naming the scripted embeddings model and a cache file.
func retrievalConfig(t *testing.T, g *gatewaytest.Server) (path, cache string) {
	t.Helper()
	path = servertest.ConfigDir(t, "watch = false", g, retrievalPrompts)
	cache = filepath.Join(filepath.Dir(path), ".promptforge", "vectors.cache")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n[retrieval]\nembeddings_model = \"scripted-embed\"\ncache = \".promptforge/vectors.cache\"\ntimeout = \"5s\"\n"); err != nil {
		t.Fatal(err)
	}
	return path, cache
}

func needPrompt(t *testing.T, cs *mcp.ClientSession, capability string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolNeedPrompt, Arguments: map[string]any{"capability": capability}})
	if err != nil {
		t.Fatal(err)
	}
	return servertest.TextOf(t, res)
}

func TestBootRanksNeedPromptByEmbeddingsAndCachesThem(t *testing.T) {
	g := gatewaytest.New(t)
	g.RespondEmbeddings(gatewaytest.NewScriptedEmbedder(0).Respond)
	path, cache := retrievalConfig(t, g)
	log := newSignalLog()
	cs, done := bootStdio(t, path, log)
	got := needPrompt(t, cs, "condense this article")
	if !strings.Contains(got, `"summarize"`) || strings.Index(got, `"summarize"`) > strings.Index(got+`"translate"`, `"translate"`) {
		t.Errorf("need_prompt for a synonym: %s", got)
	}
	reqs := g.EmbeddingRequests()
	if len(reqs) < 2 || len(reqs[0].EmbeddingInputs()) != len(retrievalPrompts) || reqs[0].Body["model"] != "scripted-embed" {
		t.Fatalf("embeddings requests: %d, first %v", len(reqs), reqs[0].Body)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no cache file: %v", err)
	}

	// A restart re-embeds nothing it has seen: the prompts and the need
	// come from the cache file.
	before := len(g.EmbeddingRequests())
	cs, done = bootStdio(t, path, newSignalLog())
	if got := needPrompt(t, cs, "condense this article"); !strings.Contains(got, `"summarize"`) {
		t.Errorf("after a restart: %s", got)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(g.EmbeddingRequests()) - before; n != 0 {
		t.Errorf("a restart sent %d embeddings requests, want 0", n)
	}
}

func TestBootFallsBackToLexicalWhenEmbeddingsFail(t *testing.T) {
	g := gatewaytest.New(t)
	g.RespondEmbeddings(func(gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Status(404, `{"error":{"message":"model \"scripted-embed\" not found, try pulling it first","type":"api_error"}}`)
	})
	path, _ := retrievalConfig(t, g)
	log := newSignalLog()
	cs, done := bootStdio(t, path, log)
	if got := needPrompt(t, cs, "get the weather forecast"); !strings.Contains(got, `"weather"`) {
		t.Errorf("lexical fallback: %s", got)
	}
	needPrompt(t, cs, "translate this")
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	text := log.text()
	if n := strings.Count(text, "falls back to the lexical ranker"); n != 1 || !strings.Contains(text, "try pulling it first") {
		t.Errorf("fallback logged %d times:\n%s", n, text)
	}
}
