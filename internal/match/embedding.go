package match

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Embedder turns texts into dense vectors, one per text and in order. The
// gateway client's embeddings call (POST /embeddings, batched) is the
// intended implementation, usually behind a cache.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Embedding is the ranker for sentence embeddings: every doc's Text is
// embedded in one call (the embedder batches), each need on its own;
// vectors are L2-normalised and compared by dot product. A vector does
// not depend on what it was batched with: servers embed each input
// separately. Scores are cosines in [-1,1]; pair it with ReferencePolicy
// when the embedder serves bge-small-en-v1.5, or a policy calibrated for
// the model (EmbeddingPolicy is the one calibrated on the evaluation set).
type Embedding struct {
	e Embedder
}

// NewEmbedding returns a ranker that embeds through e.
func NewEmbedding(e Embedder) Embedding { return Embedding{e: e} }

// Index embeds every doc. One failure fails the index: a catalog with a
// doc missing from it would silently never bind that doc.
func (r Embedding) Index(ctx context.Context, docs []Doc) (Index, error) {
	ix := &embIndex{e: r.e, docs: slices.Clone(docs)}
	if len(docs) == 0 {
		return ix, nil
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text()
	}
	vecs, err := r.embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("index %d docs: %w", len(docs), err)
	}
	ix.vecs = vecs
	return ix, nil
}

// embed embeds texts and normalises each vector; every vector must have
// the same number of dimensions.
func (r Embedding) embed(ctx context.Context, texts []string) ([][]float64, error) {
	raw, err := r.e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed text: %w", err)
	}
	if len(raw) != len(texts) {
		return nil, fmt.Errorf("embed text: the embedder returned %d vectors for %d texts", len(raw), len(texts))
	}
	out := make([][]float64, len(raw))
	for i, rv := range raw {
		if i > 0 && len(rv) != len(raw[0]) {
			return nil, fmt.Errorf("embed text %q: the embedder returned %d dimensions after %d", clip(texts[i]), len(rv), len(raw[0]))
		}
		v, err := normalise(rv)
		if err != nil {
			return nil, fmt.Errorf("embed text %q: %w", clip(texts[i]), err)
		}
		out[i] = v
	}
	return out, nil
}

func normalise(raw []float32) ([]float64, error) {
	v := make([]float64, len(raw))
	norm := 0.0
	for i, x := range raw {
		v[i] = float64(x)
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	if norm == 0 || !finite(norm) {
		return nil, fmt.Errorf("the embedder returned a vector of norm %v; check the embeddings model", norm)
	}
	for i := range v {
		v[i] /= norm
	}
	return v, nil
}

// clip shortens a text for an error message.
func clip(s string) string {
	const most = 60
	if r := []rune(s); len(r) > most {
		return string(r[:most]) + "…"
	}
	return s
}

type embIndex struct {
	e    Embedder
	docs []Doc
	vecs [][]float64
}

func (ix *embIndex) Len() int      { return len(ix.docs) }
func (ix *embIndex) Doc(i int) Doc { return ix.docs[i] }

func (ix *embIndex) Score(ctx context.Context, need string) ([]float64, error) {
	scores := make([]float64, len(ix.docs))
	if len(ix.docs) == 0 {
		return scores, nil
	}
	qs, err := Embedding{e: ix.e}.embed(ctx, []string{need})
	if err != nil {
		return nil, err
	}
	q := qs[0]
	if len(q) != len(ix.vecs[0]) {
		return nil, fmt.Errorf("embed need: %d dimensions, but the index holds %d", len(q), len(ix.vecs[0]))
	}
	for i, v := range ix.vecs {
		scores[i] = dot(q, v)
	}
	return scores, nil
}

func (ix *embIndex) DocSimilarity(i, j int) float64 { return dot(ix.vecs[i], ix.vecs[j]) }

// dot of two unit vectors, clamped to [-1,1] against rounding.
func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return min(max(s, -1), 1)
}
