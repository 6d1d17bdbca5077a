package match

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRetryAfter is how long a Fallback ranker ranks lexically after
// its embedder failed before it tries the embedder again.
const DefaultRetryAfter = 30 * time.Second

// FallbackOptions configure NewFallback.
type FallbackOptions struct {
	// Logger receives one line when the embedder fails and one when it
	// answers again; nil discards them.
	Logger *slog.Logger
	// RetryAfter is how long the ranker stays lexical after a failure
	// (DefaultRetryAfter when zero): a server that is down would
	// otherwise cost every binding a failed request, and a silent one a
	// whole timeout.
	RetryAfter time.Duration
}

// Fallback ranks with embeddings while the embedder answers and with the
// lexical ranker while it does not (gateway-picker-webfetch §2.8). Every
// index it builds holds both: the lexical one is cheap and always built;
// the embedding one is built when the embedder answers, and, if it did
// not at Index time, on a later Score once the retry delay has passed, so
// an index built while the server was down is upgraded when it returns.
//
// A need scored lexically must be judged by lexical thresholds: Resolve,
// Shortlist and NearDuplicates use the policy's Lexical policy then (see
// [Policy.Lexical]).
//
// The state (up, or down until a retry time) is shared by every index of
// one Fallback, so an outage is logged once, however many bindings meet
// it. Safe for concurrent use; it starts no goroutine.
type Fallback struct {
	emb        Embedding
	log        *slog.Logger
	retryAfter time.Duration

	mu         sync.Mutex
	down       bool
	retryAt    time.Time
	lastReason string
}

// NewFallback returns a ranker embedding through e, lexical while e fails.
func NewFallback(e Embedder, opts FallbackOptions) *Fallback {
	f := &Fallback{emb: NewEmbedding(e), log: opts.Logger, retryAfter: opts.RetryAfter}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.retryAfter <= 0 {
		f.retryAfter = DefaultRetryAfter
	}
	return f
}

// Index builds the lexical index and, unless the embedder is in its retry
// delay, the embedding index. Only the caller's ctx ending is an error.
func (f *Fallback) Index(ctx context.Context, docs []Doc) (Index, error) {
	lex, err := NewLexical().Index(ctx, docs)
	if err != nil {
		return nil, err
	}
	ix := &fallbackIndex{f: f, lex: lex, docs: slices.Clone(docs), building: make(chan struct{}, 1)}
	if _, err := ix.embedded(ctx); err != nil {
		return nil, err
	}
	return ix, nil
}

// usable reports whether the embedder may be tried now.
func (f *Fallback) usable() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.down || !time.Now().Before(f.retryAt)
}

// failed records a failure: the first one of an outage is logged, with
// what failed, which says what to fix.
func (f *Fallback) failed(err error) {
	f.mu.Lock()
	first := !f.down
	f.down, f.retryAt, f.lastReason = true, time.Now().Add(f.retryAfter), err.Error()
	f.mu.Unlock()
	if first {
		f.log.Warn("embeddings are unavailable: binding falls back to the lexical ranker until the embeddings model answers again",
			"error", err, "retry_after", f.retryAfter)
	}
}

// answered records a success, logging the end of an outage.
func (f *Fallback) answered() {
	f.mu.Lock()
	was := f.down
	f.down = false
	f.mu.Unlock()
	if was {
		f.log.Info("embeddings answer again: binding ranks by embeddings")
	}
}

// fallbackIndex is a Fallback's index: the lexical index always, the
// embedding index once the embedder has answered for these docs.
type fallbackIndex struct {
	f    *Fallback
	lex  Index
	docs []Doc
	emb  atomic.Pointer[Index]
	// building holds a token while one caller embeds the docs: the
	// attempts are serialised, and a caller waiting for another's (which
	// lasts as long as the embedder takes, up to the gateway's timeout)
	// still leaves as soon as its own ctx ends.
	building chan struct{}
}

// embedded returns the embedding index, building it if the embedder may
// be tried; nil means rank lexically. An error only when ctx ended.
func (ix *fallbackIndex) embedded(ctx context.Context) (Index, error) {
	if p := ix.emb.Load(); p != nil {
		return *p, nil
	}
	if !ix.f.usable() {
		return nil, nil
	}
	select {
	case ix.building <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the embedding of the candidates another caller started: %w", ctx.Err())
	}
	defer func() { <-ix.building }()
	if p := ix.emb.Load(); p != nil {
		return *p, nil
	}
	if !ix.f.usable() {
		return nil, nil // another caller failed while this one waited
	}
	e, err := ix.f.emb.Index(ctx, ix.docs)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errors.Join(err, ctx.Err())
		}
		ix.f.failed(err)
		return nil, nil
	}
	if len(ix.docs) > 0 {
		// An empty catalog embeds nothing, so it proves nothing about
		// the server.
		ix.f.answered()
	}
	ix.emb.Store(&e)
	return e, nil
}

func (ix *fallbackIndex) Len() int      { return len(ix.docs) }
func (ix *fallbackIndex) Doc(i int) Doc { return ix.docs[i] }

// Score scores by embeddings when it can; see scoreFrom.
func (ix *fallbackIndex) Score(ctx context.Context, need string) ([]float64, error) {
	scores, _, err := ix.scoreFrom(ctx, need)
	return scores, err
}

// scoreFrom scores need and returns the index that scored it: the
// embedding index, or the lexical one when the embedder is down.
func (ix *fallbackIndex) scoreFrom(ctx context.Context, need string) ([]float64, Index, error) {
	e, err := ix.embedded(ctx)
	if err != nil {
		return nil, nil, err
	}
	if e != nil && ix.f.usable() {
		scores, err := e.Score(ctx, need)
		if err == nil {
			if len(ix.docs) > 0 {
				ix.f.answered()
			}
			return scores, e, nil
		}
		if ctx.Err() != nil {
			return nil, nil, errors.Join(err, ctx.Err())
		}
		ix.f.failed(err)
	}
	scores, err := ix.lex.Score(ctx, need)
	return scores, ix.lex, err
}

// DocSimilarity is the embedding similarity when the docs are embedded,
// else the lexical one; current says which.
func (ix *fallbackIndex) DocSimilarity(i, j int) float64 { return ix.current().DocSimilarity(i, j) }

func (ix *fallbackIndex) current() Index {
	if p := ix.emb.Load(); p != nil {
		return *p
	}
	return ix.lex
}

// lexical reports whether sub is this index's lexical side.
func (ix *fallbackIndex) lexical(sub Index) bool { return sub == ix.lex }
