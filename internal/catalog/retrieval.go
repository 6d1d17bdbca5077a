package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

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
	// RetrievalStale: rebuilding failed, so the index is an older
	// catalog's; names it offers that no longer resolve to a healthy
	// prompt are left out.
	RetrievalStale
	// RetrievalPending: a reload changed some name, description or health
	// and the index over this generation's catalog is not built yet. The
	// first Shortlist builds it; the state then becomes RetrievalCurrent,
	// or RetrievalStale if the build fails.
	RetrievalPending
)

func (s RetrievalState) String() string {
	switch s {
	case RetrievalIdle:
		return "idle"
	case RetrievalCurrent:
		return "current"
	case RetrievalStale:
		return "stale"
	case RetrievalPending:
		return "pending"
	}
	return fmt.Sprintf("RetrievalState(%d)", uint8(s))
}

// index is one built retrieval index: doc i is the prompt names[i].
type index struct {
	idx   match.Index
	names []string
}

// retrieval is a generation's need_prompt index. Generations whose
// catalogs hash alike share one retrieval object, so an index built (or
// found broken) through any of them serves them all. A reload that
// changes the hash gets a pending retrieval instead of paying for the
// build: the first Shortlist builds it, once.
type retrieval struct {
	ranker match.Ranker // nil unless the retrieval was created pending
	log    *slog.Logger
	// building is a one-slot lock held while the index is built. A channel
	// rather than a mutex so a caller waiting for someone else's build can
	// give up when its own context ends.
	building chan struct{}
	phase    atomic.Pointer[phase]
}

// phase is one immutable stage of a retrieval; moving on swaps the
// pointer, so readers never need the lock.
type phase struct {
	pending bool
	built   *index // nil while pending, and when idle
	stale   bool
	// While pending: the catalog to index (its healthy entries, listed
	// when the build starts rather than at every reload), and the most
	// recent index built for an earlier catalog, which a failed build
	// falls back to. Both are dropped once the build settles, so they are
	// not kept alive.
	catalog  *Catalog
	fallback *index
}

// builtRetrieval wraps an index that is ready now.
func builtRetrieval(ix *index) *retrieval {
	r := &retrieval{}
	r.phase.Store(&phase{built: ix})
	return r
}

// pendingRetrieval defers indexing c's healthy entries to the first
// Shortlist. fallback is what a failed build serves, marked stale.
func pendingRetrieval(ranker match.Ranker, log *slog.Logger, c *Catalog, fallback *index) *retrieval {
	r := &retrieval{ranker: ranker, log: log, building: make(chan struct{}, 1)}
	r.phase.Store(&phase{pending: true, catalog: c, fallback: fallback})
	return r
}

func (r *retrieval) state() RetrievalState {
	if r == nil {
		return RetrievalIdle
	}
	switch p := r.phase.Load(); {
	case p.pending:
		return RetrievalPending
	case p.built == nil:
		return RetrievalIdle
	case p.stale:
		return RetrievalStale
	}
	return RetrievalCurrent
}

// latest is the newest index this retrieval can offer without building:
// its own when built, else what it would fall back to. A reload hands it
// to the next pending retrieval, so fallbacks never chain.
func (r *retrieval) latest() *index {
	p := r.phase.Load()
	if p.pending {
		return p.fallback
	}
	return p.built
}

// ready returns the index to rank with, building it first if it is
// pending. The build runs under the caller's ctx: a caller that gives up
// leaves the retrieval pending for the next one rather than failing it.
// A build that fails for any other reason settles on the fallback,
// marked stale, as a failed rebuild always has. nil means idle.
func (r *retrieval) ready(ctx context.Context) (*index, error) {
	if p := r.phase.Load(); !p.pending {
		return p.built, nil
	}
	select {
	case r.building <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the retrieval index to be built: %w", ctx.Err())
	}
	defer func() { <-r.building }()
	p := r.phase.Load()
	if !p.pending {
		return p.built, nil // built while this caller waited
	}
	ix, err := buildRetrieval(ctx, r.ranker, p.catalog)
	switch {
	case err == nil:
		r.phase.Store(&phase{built: ix})
		r.log.Debug("need_prompt ranks the catalog", "prompts", len(ix.names))
	case ctx.Err() != nil:
		return nil, fmt.Errorf("build the retrieval index (it stays pending for the next caller): %w", err)
	default:
		r.log.Warn("need_prompt keeps its previous index", "error", err)
		r.phase.Store(&phase{built: p.fallback, stale: true})
	}
	return r.phase.Load().built, nil
}

// healthyDocs lists what need_prompt ranks: every healthy entry's name and
// description, in catalog order. Broken entries are never candidates.
func healthyDocs(c *Catalog) (names, descs []string) {
	n := c.Len() - c.BrokenCount()
	names, descs = make([]string, 0, n), make([]string, 0, n)
	for _, e := range c.All() {
		if !e.Broken() {
			names = append(names, e.Name())
			descs = append(descs, e.Description())
		}
	}
	return names, descs
}

// buildIndex indexes the prompts names[i] described by descs[i].
func buildIndex(ctx context.Context, ranker match.Ranker, names, descs []string) (*index, error) {
	docs := make([]match.Doc, len(names))
	for i := range names {
		docs[i] = match.PromptDoc(names[i], descs[i])
	}
	idx, err := ranker.Index(ctx, docs)
	if err != nil {
		return nil, fmt.Errorf("index %d prompt(s) for need_prompt: %w", len(docs), err)
	}
	return &index{idx: idx, names: names}, nil
}

// buildRetrieval indexes every healthy entry of c now.
func buildRetrieval(ctx context.Context, ranker match.Ranker, c *Catalog) (*index, error) {
	names, descs := healthyDocs(c)
	return buildIndex(ctx, ranker, names, descs)
}

// Shortlist ranks the generation's healthy prompts against a capability
// and returns up to k, best first, each resolving in this generation's
// catalog. It waits for one of the Handle's ranking slots (bounded by
// ctx), then, if the index is pending, builds it or waits for the caller
// already building it. Errors: ErrRetrievalUnavailable when there is no
// index; otherwise the message starts "acquire a ranking slot" or "rank
// prompts for the capability", which is what a caller is told.
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
	ix, err := r.ready(ctx)
	if err != nil {
		return nil, fmt.Errorf("rank prompts for the capability: %w", err)
	}
	if ix == nil {
		return nil, ErrRetrievalUnavailable
	}
	ids, err := match.Shortlist(ctx, ix.idx, g.policy, capability, k)
	if err != nil {
		return nil, fmt.Errorf("rank prompts for the capability: %w", err)
	}
	out := make([]Entry, 0, len(ids))
	for _, i := range ids {
		// A stale index may name prompts this catalog no longer has, or
		// has broken; only this generation's healthy entries are offered.
		if e, ok := g.catalog.Healthy(ix.names[i]); ok {
			out = append(out, e)
		}
	}
	return out, nil
}
