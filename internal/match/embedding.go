package match

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Embedder turns one text into a dense vector. The gateway client's
// embeddings call is the intended implementation.
type Embedder interface {
	Embed(ctx context.Context, text string) ([]float32, error)
}

// Embedding is the ranker for sentence embeddings: each doc's Text and
// each need are embedded one at a time (so a vector never depends on what
// it was batched with), L2-normalised, and compared by dot product.
// Scores are cosines in [-1,1]; pair it with ReferencePolicy when the
// embedder serves bge-small-en-v1.5, or calibrate a policy for the model.
type Embedding struct {
	e Embedder
}

// NewEmbedding returns a ranker that embeds through e.
func NewEmbedding(e Embedder) Embedding { return Embedding{e: e} }

// Index embeds every doc. One failure fails the index: a catalog with a
// doc missing from it would silently never bind that doc.
func (r Embedding) Index(ctx context.Context, docs []Doc) (Index, error) {
	ix := &embIndex{e: r.e, docs: slices.Clone(docs), vecs: make([][]float64, len(docs))}
	for i, d := range docs {
		v, err := r.embed(ctx, d.Text())
		if err != nil {
			return nil, fmt.Errorf("index %s/%s: %w", d.Group, d.Name, err)
		}
		if i > 0 && len(v) != len(ix.vecs[0]) {
			return nil, fmt.Errorf("index %s/%s: the embedder returned %d dimensions after %d", d.Group, d.Name, len(v), len(ix.vecs[0]))
		}
		ix.vecs[i] = v
	}
	return ix, nil
}

func (r Embedding) embed(ctx context.Context, text string) ([]float64, error) {
	raw, err := r.e.Embed(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("embed text: %w", err)
	}
	v := make([]float64, len(raw))
	norm := 0.0
	for i, x := range raw {
		v[i] = float64(x)
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	if norm == 0 || !finite(norm) {
		return nil, fmt.Errorf("embed text: the embedder returned a vector of norm %v; check the embeddings model", norm)
	}
	for i := range v {
		v[i] /= norm
	}
	return v, nil
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
	q, err := Embedding{e: ix.e}.embed(ctx, need)
	if err != nil {
		return nil, err
	}
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
