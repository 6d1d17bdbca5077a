package match

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// tableEmbedder returns fixed vectors by text, so tests choose every
// cosine, including negative ones.
type tableEmbedder struct {
	vecs  map[string][]float32
	calls []string
}

func (e *tableEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, text := range texts {
		e.calls = append(e.calls, text)
		v, ok := e.vecs[text]
		if !ok {
			return nil, errors.New("no vector for " + text)
		}
		out[i] = v
	}
	return out, nil
}

func TestEmbeddingRanker(t *testing.T) {
	ctx := context.Background()
	docs := []Doc{PromptDoc("alpha", "First."), PromptDoc("beta", "Second."), PromptDoc("gamma", "Third.")}
	e := &tableEmbedder{vecs: map[string][]float32{
		docs[0].Text(): {3, 0}, // normalised by the ranker
		docs[1].Text(): {0, 1},
		docs[2].Text(): {-1, 0},
		"need":         {1, 0},
	}}
	idx, err := NewEmbedding(e).Index(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.calls, []string{docs[0].Text(), docs[1].Text(), docs[2].Text()}) {
		t.Fatalf("embedded %q, want each doc text once, in order", e.calls)
	}
	scores, err := idx.Score(ctx, "need")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(scores, []float64{1, 0, -1}) {
		t.Fatalf("scores = %v, want cosines [1 0 -1]", scores)
	}
	if s := idx.DocSimilarity(0, 2); s != -1 || idx.DocSimilarity(2, 0) != s {
		t.Fatalf("DocSimilarity(0,2) = %v, want -1 both ways", s)
	}
	// A floor of 0 withholds negative scores.
	sl, err := Shortlist(ctx, idx, RetrievalPolicy(), "need", 3)
	if err != nil || !slices.Equal(sl, []int{0, 1}) {
		t.Fatalf("Shortlist = %v, %v; want [0 1]", sl, err)
	}
	d, err := Resolve(ctx, idx, ReferencePolicy(), "need")
	if err != nil || d.Outcome != Bind || !slices.Equal(d.Members, []int{0}) {
		t.Fatalf("Resolve = %v, %v; want bind [0]", d, err)
	}
}

func TestEmbeddingFailures(t *testing.T) {
	ctx := context.Background()
	doc := ToolDoc("s", "t", "d", nil)
	tests := []struct {
		name string
		vecs map[string][]float32
		want string
	}{
		{"embedder error", map[string][]float32{}, "index 1 docs: embed text: no vector for t. d"},
		{"zero vector", map[string][]float32{doc.Text(): {0, 0}}, "norm 0"},
		{"non-finite vector", map[string][]float32{doc.Text(): {float32(math.Inf(1)), 0}}, "norm +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewEmbedding(&tableEmbedder{vecs: tt.vecs}).Index(ctx, []Doc{doc})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Index error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	other := ToolDoc("s", "u", "d", nil)
	_, err := NewEmbedding(&tableEmbedder{vecs: map[string][]float32{doc.Text(): {1, 0}, other.Text(): {1, 0, 0}}}).Index(ctx, []Doc{doc, other})
	if err == nil || !strings.Contains(err.Error(), "3 dimensions after 2") {
		t.Fatalf("mixed dimensions: %v", err)
	}
	e := &tableEmbedder{vecs: map[string][]float32{doc.Text(): {1, 0}, "short": {1}}}
	idx, err := NewEmbedding(e).Index(ctx, []Doc{doc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(ctx, idx, ReferencePolicy(), "short"); err == nil || !strings.Contains(err.Error(), "1 dimensions") {
		t.Fatalf("need of the wrong dimension: %v", err)
	}
	if _, err := Resolve(ctx, idx, ReferencePolicy(), "unknown"); err == nil || !strings.Contains(err.Error(), "no vector for unknown") {
		t.Fatalf("need that fails to embed: %v", err)
	}
}

func TestEmbeddingEmptyCatalog(t *testing.T) {
	e := &tableEmbedder{}
	idx, err := NewEmbedding(e).Index(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Resolve(context.Background(), idx, ReferencePolicy(), "anything")
	if err != nil || d.Outcome != Absent || len(e.calls) != 0 {
		t.Fatalf("empty catalog: %v, %v, embedded %q; want absent without embedding", d, err, e.calls)
	}
}
