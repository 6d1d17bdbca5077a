package app

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/embedcache"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/match"
	"github.com/promptforge-go/promptforge/internal/server"
)

// retrievalPlan is [retrieval]: the embeddings model needs are ranked
// with ("" ranks lexically), its cache file ("" keeps vectors in memory)
// and its request timeout.
type retrievalPlan struct {
	model   string
	cache   string
	timeout time.Duration
	// tools, models and prompts override the embedding policies'
	// thresholds ([retrieval.tools] and so on).
	tools, models, prompts config.Thresholds
	// retryAfter is the Fallback ranker's retry delay; zero takes
	// match.DefaultRetryAfter. Only tests set it.
	retryAfter time.Duration
}

// withThresholds returns p with the thresholds t sets.
func withThresholds(p match.Policy, t config.Thresholds) match.Policy {
	for _, f := range []struct {
		v   *float64
		dst *float64
	}{{t.SimilarityFloor, &p.SimilarityFloor}, {t.Margin, &p.Margin}, {t.SoloFloor, &p.SoloFloor}, {t.DuplicateThreshold, &p.DuplicateThreshold}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return p
}

// ranking is how needs are ranked for one process: runs and probes take
// run, need_prompt's catalog takes prompts and promptPolicy (nil for
// both: the catalog's lexical default).
type ranking struct {
	run          engine.Ranking
	prompts      match.Ranker
	promptPolicy *match.Policy
	closers      []func()
}

// Close writes the vector cache and releases idle connections.
func (r *ranking) Close() {
	for _, c := range r.closers {
		c()
	}
}

// ranking builds the rankers [retrieval] asks for: with an embeddings
// model and a gateway, one match.Fallback over the gateway's /embeddings
// behind one vector cache, shared by the three bindings, so a text is
// embedded once whichever binding meets it first; otherwise the lexical
// defaults. It contacts nothing: the first index build does. Its gateway
// client is its own (the embeddings timeout is not the chat one), on a
// transport timed in m like every gateway call.
func (p envPlan) ranking(m *server.Metrics, logger *slog.Logger) (*ranking, error) {
	r := &ranking{}
	if p.retrieval.model == "" || p.gateway == nil {
		return r, nil
	}
	if m == nil {
		m = server.NewMetrics()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base := gateway.NewTransport()
	gc := *p.gateway
	gc.EmbeddingsTimeout = p.retrieval.timeout
	gc.HTTPClient = &http.Client{Transport: m.GatewayTransport(base)}
	client, err := gateway.New(gc)
	if err != nil {
		return nil, p.wrap("build the embeddings client", "", err)
	}
	r.closers = append(r.closers, base.CloseIdleConnections)
	if p.retrieval.cache != "" {
		// The cache's directory is made here, so the usual setting
		// (".promptforge/vectors.cache") works on a fresh checkout; if it
		// cannot be, the cache logs each failed write and stays in memory.
		if err := os.MkdirAll(filepath.Dir(p.retrieval.cache), 0o700); err != nil {
			logger.Warn("the embeddings cache's directory cannot be made; vectors stay in memory", "path", p.retrieval.cache, "error", err)
		}
	}
	cache := embedcache.New(client.Embedder(p.retrieval.model), embedcache.Options{
		Model: p.retrieval.model, Path: p.retrieval.cache, Logger: logger,
	})
	r.closers = append(r.closers, func() { _ = cache.Close() })
	ranker := match.NewFallback(cache, match.FallbackOptions{Logger: logger, RetryAfter: p.retrieval.retryAfter})
	tools := withThresholds(match.EmbeddingPolicy(), p.retrieval.tools)
	models := withThresholds(match.EmbeddingModelPolicy(), p.retrieval.models)
	prompts := withThresholds(match.EmbeddingRetrievalPolicy(), p.retrieval.prompts)
	for use, pol := range map[string]match.Policy{"tools": tools, "models": models, "prompts": prompts} {
		if err := pol.Validate(); err != nil {
			return nil, p.wrap("check [retrieval."+use+"]", "", err)
		}
	}
	r.run = engine.Ranking{Ranker: ranker, ToolPolicy: &tools, ModelPolicy: &models}
	r.prompts, r.promptPolicy = ranker, &prompts
	logger.Info("needs are ranked by embeddings", "model", p.retrieval.model, "cache", p.retrieval.cache)
	return r, nil
}
