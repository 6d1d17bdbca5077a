package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/match"
	"github.com/promptforge-go/promptforge/internal/secret"
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
func retrievalConfig(t *testing.T, g *gatewaytest.Server, serverLines ...string) (path, cache string) {
	t.Helper()
	lines := "watch = false"
	if len(serverLines) > 0 {
		lines = strings.Join(serverLines, "\n")
	}
	path = servertest.ConfigDir(t, lines, g, retrievalPrompts)
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

func TestRetrievalThresholdsReachThePolicies(t *testing.T) {
	floor, solo := 0.275, 0.2
	g := gatewaytest.New(t)
	plan := envPlan{gateway: &gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey())},
		retrieval: retrievalPlan{model: "m", tools: config.Thresholds{SimilarityFloor: &floor, SoloFloor: &solo}}}
	r, err := plan.ranking(nil, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tp, mp := r.run.ToolPolicy, r.run.ModelPolicy
	if tp.SimilarityFloor != 0.275 || tp.SoloFloor != 0.2 || tp.Margin != match.EmbeddingPolicy().Margin || tp.Lexical == nil || *tp.Lexical != match.LexicalPolicy() {
		t.Errorf("tools policy %+v", tp)
	}
	if want := match.EmbeddingModelPolicy(); mp.SimilarityFloor != want.SimilarityFloor || mp.SoloFloor != want.SoloFloor || mp.Lexical == nil || *mp.Lexical != match.LexicalModelPolicy() {
		t.Errorf("models policy %+v", mp)
	}
	if r.prompts == nil || r.promptPolicy.SimilarityFloor != 0 {
		t.Errorf("prompts %v %+v", r.prompts, r.promptPolicy)
	}
	// Without a model nothing changes: the lexical defaults.
	r, err = envPlan{gateway: plan.gateway}.ranking(nil, discard())
	if err != nil || r.run.Ranker != nil || r.prompts != nil {
		t.Fatalf("lexical plan: %+v, %v", r, err)
	}
}

// A reload embeds only the texts that changed: the prompts it kept come
// from the cache.
func TestAReloadEmbedsOnlyWhatChanged(t *testing.T) {
	g := gatewaytest.New(t)
	g.RespondEmbeddings(gatewaytest.NewScriptedEmbedder(0).Respond)
	path, _ := retrievalConfig(t, g, `watch_debounce = "50ms"`)
	log := newSignalLog()
	cs, done := bootStdio(t, path, log)
	needPrompt(t, cs, "condense this article")
	before := len(g.EmbeddingRequests())

	reloaded := log.on("reloaded ")
	servertest.WriteTree(t, filepath.Join(filepath.Dir(path), "prompts"), map[string]string{
		"recap.md": luaPrompt("recap", "Recap a meeting transcript.", "return args"),
	})
	select {
	case <-reloaded:
	case <-time.After(10 * time.Second):
		t.Fatalf("no reload within 10s; log:\n%s", log.text())
	}
	if got := needPrompt(t, cs, "condense this article"); !strings.Contains(got, `"summarize"`) {
		t.Errorf("after the reload: %s", got)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, r := range g.EmbeddingRequests()[before:] {
		sent = append(sent, r.EmbeddingInputs()...)
	}
	if len(sent) != 1 || !strings.HasPrefix(sent[0], "recap. Recap a meeting transcript.") {
		t.Errorf("the reload embedded %q, want only the new prompt", sent)
	}
}
