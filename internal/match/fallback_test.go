package match

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// conceptEmbedder maps each word to a concept axis (synonyms share one),
// so "condense" meets "summarize" as a real embedder's would, and can be
// switched down.
type conceptEmbedder struct {
	mu    sync.Mutex
	down  bool
	calls int
}

var conceptAxes = []string{"summarize condense digest", "translate", "weather forecast umbrella", "document article"}

func (e *conceptEmbedder) setDown(d bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down = d
}

func (e *conceptEmbedder) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

func (e *conceptEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if e.down {
		return nil, errors.New("connection refused")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(conceptAxes)+1)
		v[len(conceptAxes)] = 0.1 // every text has some norm
		for _, w := range strings.Fields(strings.ToLower(strings.Trim(t, "."))) {
			for a, words := range conceptAxes {
				if slices.Contains(strings.Fields(words), strings.Trim(w, ".,")) {
					v[a]++
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

func fallbackDocs() []Doc {
	return []Doc{
		PromptDoc("summarize", "Summarize a document."),
		PromptDoc("translate", "Translate text into another language."),
	}
}

// embPolicy is strict enough that a lexical score never passes it: a
// need can only bind through it by embeddings.
func embPolicy() Policy {
	p := Policy{SimilarityFloor: 0.9, Margin: 0.05, DuplicateThreshold: 0.98, SoloFloor: 0.9, TopK: 3}
	lex := LexicalPolicy()
	p.Lexical = &lex
	return p
}

func TestFallbackBindsSynonymsByEmbeddingAndFallsBackLexically(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		e := &conceptEmbedder{}
		f := NewFallback(e, FallbackOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)), RetryAfter: time.Minute})
		ctx := t.Context()
		idx, err := f.Index(ctx, fallbackDocs())
		if err != nil {
			t.Fatal(err)
		}
		d, err := Resolve(ctx, idx, embPolicy(), "condense this article")
		if err != nil || d.Outcome != Bind || d.Members[0] != 0 {
			t.Fatalf("by embeddings: %v, %v; want bind summarize", d, err)
		}

		// The server goes down: the same need shares no word with any
		// prompt, so lexically it binds nothing; a verbatim need still
		// binds, judged by the lexical policy (the embedding floor would
		// refuse a 0.8 lexical score).
		e.setDown(true)
		d, err = Resolve(ctx, idx, embPolicy(), "condense this article")
		if err != nil || d.Outcome != Absent {
			t.Fatalf("down, synonym: %v, %v; want absent", d, err)
		}
		calls := e.count()
		d, err = Resolve(ctx, idx, embPolicy(), "summarize a document")
		if err != nil || d.Outcome != Bind || d.Members[0] != 0 {
			t.Fatalf("down, verbatim: %v, %v; want bind by the lexical policy", d, err)
		}
		if e.count() != calls {
			t.Errorf("the embedder was called during its retry delay")
		}
		// A second index built during the outage does not call it either,
		// and the outage is logged once.
		if _, err := f.Index(ctx, fallbackDocs()); err != nil || e.count() != calls {
			t.Fatalf("index during the outage: %v, %d calls after %d", err, e.count(), calls)
		}
		if n := strings.Count(logs.String(), "falls back to the lexical ranker"); n != 1 {
			t.Errorf("fallback logged %d times:\n%s", n, logs.String())
		}

		// After the retry delay the embedder is tried again and answers.
		e.setDown(false)
		time.Sleep(time.Minute)
		d, err = Resolve(ctx, idx, embPolicy(), "condense this article")
		if err != nil || d.Outcome != Bind || d.Members[0] != 0 {
			t.Fatalf("recovered: %v, %v; want bind summarize", d, err)
		}
		if n := strings.Count(logs.String(), "embeddings answer again"); n != 1 {
			t.Errorf("recovery logged %d times:\n%s", n, logs.String())
		}
	})
}

func TestFallbackIndexBuiltWhileDownIsUpgradedLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &conceptEmbedder{down: true}
		f := NewFallback(e, FallbackOptions{})
		ctx := t.Context()
		idx, err := f.Index(ctx, fallbackDocs())
		if err != nil {
			t.Fatal(err)
		}
		sl, err := Shortlist(ctx, idx, embPolicy(), "digest of the article", 3)
		if err != nil || len(sl) != 0 {
			t.Fatalf("down: %v, %v; want nothing (no shared word)", sl, err)
		}
		e.setDown(false)
		time.Sleep(DefaultRetryAfter)
		sl, err = Shortlist(ctx, idx, embPolicy(), "digest of the article", 3)
		if err != nil || !slices.Equal(sl, []int{0}) {
			t.Fatalf("up again: %v, %v; want [summarize]", sl, err)
		}
	})
}

func TestFallbackNearDuplicatesUseTheSideInUse(t *testing.T) {
	docs := []Doc{ToolDoc("s", "a", "Summarize a document", nil), ToolDoc("s", "b", "Condense an article", nil)}
	e := &conceptEmbedder{}
	idx, err := NewFallback(e, FallbackOptions{}).Index(t.Context(), docs)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := NearDuplicates(idx, embPolicy(), []int{0, 1})
	if err != nil || len(pairs) != 1 {
		t.Fatalf("embedded: %v, %v; want the synonymous pair", pairs, err)
	}
	e2 := &conceptEmbedder{down: true}
	idx, err = NewFallback(e2, FallbackOptions{}).Index(t.Context(), docs)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err = NearDuplicates(idx, embPolicy(), []int{0, 1})
	if err != nil || len(pairs) != 0 {
		t.Fatalf("lexical: %v, %v; want none", pairs, err)
	}
}

func TestFallbackCallerCancelIsAnError(t *testing.T) {
	e := &conceptEmbedder{}
	idx, err := NewFallback(e, FallbackOptions{}).Index(t.Context(), fallbackDocs())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	e.setDown(true)
	if _, err := Resolve(ctx, idx, embPolicy(), "condense"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
}

func TestPolicyLexicalIsValidated(t *testing.T) {
	p := embPolicy()
	bad := LexicalPolicy()
	bad.TopK = 0
	p.Lexical = &bad
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "lexical fallback: match policy: top_k") {
		t.Fatalf("bad fallback: %v", err)
	}
	inner := LexicalPolicy()
	nested := LexicalPolicy()
	nested.Lexical = &inner
	p.Lexical = &nested
	if err := p.Validate(); err == nil {
		t.Fatal("a nested fallback was accepted")
	}
}

func TestFallbackEmptyCatalogSaysNothingAboutTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		e := &conceptEmbedder{down: true}
		f := NewFallback(e, FallbackOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if _, err := f.Index(t.Context(), fallbackDocs()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(DefaultRetryAfter)
		empty, err := f.Index(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := Resolve(t.Context(), empty, embPolicy(), "anything"); err != nil || d.Outcome != Absent {
			t.Fatalf("empty catalog: %v, %v", d, err)
		}
		if strings.Contains(logs.String(), "answer again") {
			t.Errorf("an empty index claimed the server answers:\n%s", logs.String())
		}
	})
}

// gatedEmbedder is a conceptEmbedder whose calls wait for gate, as a slow
// embeddings server that does not watch the caller's context would.
type gatedEmbedder struct {
	conceptEmbedder
	gate chan struct{}
}

func (e *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	<-e.gate
	return e.conceptEmbedder.Embed(ctx, texts)
}

// A caller that needs the embedding index while another caller is
// building it waits for that build only as long as its own context lasts.
// (Waiting on a sync.Mutex, as it did, is not a durable block to synctest:
// this test then fails by the test timeout, in synctest.Wait.)
func TestFallbackWaitForAnotherBuildEndsWithTheCallersContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &gatedEmbedder{gate: make(chan struct{})}
		e.setDown(true)
		close(e.gate)
		idx, err := NewFallback(e, FallbackOptions{}).Index(t.Context(), fallbackDocs())
		if err != nil {
			t.Fatal(err)
		}
		e.setDown(false)
		e.gate = make(chan struct{})
		time.Sleep(DefaultRetryAfter) // the embedder may be tried again

		building := make(chan error, 1)
		go func() {
			_, err := idx.Score(context.Background(), "condense")
			building <- err
		}()
		synctest.Wait() // the first caller is inside the embedder
		ctx, cancel := context.WithCancel(context.Background())
		waited := make(chan error, 1)
		go func() {
			_, err := idx.Score(ctx, "condense")
			waited <- err
		}()
		synctest.Wait()
		cancel()
		synctest.Wait()
		var got error
		select {
		case got = <-waited:
		default:
		}
		close(e.gate)
		if got == nil {
			<-waited
			t.Fatal("the cancelled caller waited for the other caller's embedding call")
		}
		if !errors.Is(got, context.Canceled) {
			t.Fatalf("cancelled caller: %v; want context.Canceled", got)
		}
		if err := <-building; err != nil {
			t.Fatalf("the building caller: %v", err)
		}
	})
}
