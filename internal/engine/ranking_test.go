package engine

import (
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/match"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// tools.need and models.need rank through Options.Ranking: with the
// embedding ranker over a scripted /v1/embeddings, needs phrased in
// synonyms bind what the lexical ranker cannot.
func TestRankingByEmbeddingsBindsSynonyms(t *testing.T) {
	g := gatewaytest.New(t)
	g.RespondEmbeddings(gatewaytest.NewScriptedEmbedder(0).Respond)
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	tp, mp := match.EmbeddingPolicy(), match.EmbeddingModelPolicy()
	tp.SimilarityFloor, tp.SoloFloor = 0.45, 0.2
	mp.SimilarityFloor, mp.SoloFloor = 0.45, 0.2
	ranking := Ranking{Ranker: match.NewEmbedding(c.Embedder("scripted")), ToolPolicy: &tp, ModelPolicy: &mp}
	models := []gateway.Model{
		{ID: "coder", Description: "A model for careful analysis and coding", Context: 8192, Thinking: gateway.ThinkingNever},
		{ID: "eye", Description: "A multimodal model that understands images", Context: 8192, Thinking: gateway.ThinkingNever},
	}
	p := parse(t, "# T\n\n"+lua(`
local s = tools.need("s", "google the news")
local m = models.need("m", "a model to describe this photo")
return s.wire_name .. "|" .. m.model_id`))
	runP(t, p, "", Options{Tools: bothTools(), Models: models, Ranking: ranking}).ok(t, "web_search|eye")
	// The same needs under the lexical ranker bind nothing.
	runP(t, p, "", Options{Tools: bothTools(), Models: models}).fails(t, KindBinding, `no tool matches capability "google the news"`)
	if len(g.EmbeddingRequests()) == 0 {
		t.Fatal("no embeddings request reached the gateway")
	}
}
