package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/promptforge-go/promptforge/internal/match"
)

// MaxConcurrentRankings bounds need_prompt rankings in flight per Handle;
// further callers wait for a slot.
const MaxConcurrentRankings = 4

// ErrRetrievalUnavailable: the generation has no retrieval index (ranking
// is switched off, or the index failed to build at boot), so a caller
// must choose from the full listing instead.
var ErrRetrievalUnavailable = errors.New("the retrieval index is not loaded")

// RetrievalState says what a generation's retrieval index can do.
type RetrievalState uint8

const (
	// RetrievalIdle: there is no index; Shortlist fails with
	// ErrRetrievalUnavailable.
	RetrievalIdle RetrievalState = iota + 1
	// RetrievalCurrent: the index was built over this generation's catalog.
	RetrievalCurrent
	// RetrievalStale: rebuilding failed on a reload, so the index is an
	// older catalog's; names it offers that no longer resolve to a healthy
	// prompt are left out.
	RetrievalStale
)

func (s RetrievalState) String() string {
	switch s {
	case RetrievalIdle:
		return "idle"
	case RetrievalCurrent:
		return "current"
	case RetrievalStale:
		return "stale"
	}
	return fmt.Sprintf("RetrievalState(%d)", uint8(s))
}

// retrieval is an immutable index over one catalog's healthy entries. A
// reload whose catalog hash is unchanged reuses the same object.
type retrieval struct {
	idx   match.Index // nil when idle
	names []string    // doc i -> prompt name
	stale bool
}

func (r *retrieval) state() RetrievalState {
	switch {
	case r == nil || r.idx == nil:
		return RetrievalIdle
	case r.stale:
		return RetrievalStale
	}
	return RetrievalCurrent
}

// buildRetrieval indexes every healthy entry of c; broken entries are
// never candidates.
func buildRetrieval(ctx context.Context, ranker match.Ranker, c *Catalog) (*retrieval, error) {
	docs := make([]match.Doc, 0, c.Len()-c.BrokenCount())
	names := make([]string, 0, cap(docs))
	for _, e := range c.All() {
		if e.Broken() {
			continue
		}
		docs = append(docs, match.PromptDoc(e.Name(), e.Description()))
		names = append(names, e.Name())
	}
	idx, err := ranker.Index(ctx, docs)
	if err != nil {
		return nil, fmt.Errorf("index %d prompt(s) for need_prompt: %w", len(docs), err)
	}
	return &retrieval{idx: idx, names: names}, nil
}

// Shortlist ranks the generation's healthy prompts against a capability
// and returns up to k, best first, each resolving in this generation's
// catalog. It waits for one of the Handle's ranking slots (bounded by
// ctx). Errors: ErrRetrievalUnavailable when there is no index; otherwise
// the message starts "acquire a ranking slot" or "rank prompts for the
// capability", which is what a caller is told.
func (g *Generation) Shortlist(ctx context.Context, capability string, k int) ([]Entry, error) {
	r := g.retrieval
	if r.state() == RetrievalIdle {
		return nil, ErrRetrievalUnavailable
	}
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("acquire a ranking slot: %w", ctx.Err())
	}
	defer func() { <-g.slots }()
	ids, err := match.Shortlist(ctx, r.idx, g.policy, capability, k)
	if err != nil {
		return nil, fmt.Errorf("rank prompts for the capability: %w", err)
	}
	out := make([]Entry, 0, len(ids))
	for _, i := range ids {
		if e, ok := g.catalog.Healthy(r.names[i]); ok {
			out = append(out, e)
		}
	}
	return out, nil
}
