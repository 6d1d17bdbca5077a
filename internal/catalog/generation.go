package catalog

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/promptforge-go/promptforge/internal/match"
)

// A Generation is one published catalog together with the retrieval index
// over exactly that catalog. Its catalog never changes; its index may be
// built once, on the first [Generation.Shortlist] after a reload (see
// [RetrievalPending]), and is then fixed. A caller takes one Generation per
// call and uses it throughout, so run_prompt and need_prompt never see a
// catalog paired with another catalog's index.
type Generation struct {
	catalog   *Catalog
	retrieval *retrieval
	ticket    uint64
	slots     chan struct{} // the Handle's ranking slots
	policy    match.Policy  // the Handle's retrieval policy
}

// Catalog is the generation's catalog.
func (g *Generation) Catalog() *Catalog { return g.catalog }

// Retrieval says whether Shortlist can answer and how fresh it is.
func (g *Generation) Retrieval() RetrievalState { return g.retrieval.state() }

// Ticket is the reload ticket that produced the generation; the boot
// generation is 0.
func (g *Generation) Ticket() uint64 { return g.ticket }

// Options configures a Handle.
type Options struct {
	// Logger receives boot and reload lines; nil discards them.
	Logger *slog.Logger
	// Ranker builds retrieval indexes; nil means match.NewLexical().
	Ranker match.Ranker
	// RetrievalPolicy decides which prompts need_prompt lists; nil means
	// match.LexicalRetrievalPolicy() for the default ranker and
	// match.RetrievalPolicy() for any other.
	RetrievalPolicy *match.Policy
	// NoRetrieval leaves every generation without an index, for builds
	// that do not publish need_prompt.
	NoRetrieval bool
	// ConfigPath names prompts.toml in reload log lines.
	ConfigPath string
}

// A Handle owns the live generation: it resolves the boot catalog,
// publishes each reload with one atomic pointer swap, and bounds
// concurrent rankings. Reads never wait on a reload.
type Handle struct {
	roots      []string
	log        *slog.Logger
	ranker     match.Ranker // nil when retrieval is off
	policy     match.Policy // need_prompt's decision thresholds
	configPath string
	slots      chan struct{}

	current atomic.Pointer[Generation]
	// tickets orders reloads by when they were triggered, not by when
	// they finish.
	tickets atomic.Uint64

	mu        sync.Mutex // serialises publishing against shutdown
	published uint64
	shutdown  bool
	// onPublish are the OnPublish callbacks, guarded by mu.
	onPublish []func()
}

// OnPublish registers fn to be called after every reload that publishes a
// generation, on the reloading goroutine, once the generation is current.
// The server uses it to follow the catalog with the MCP prompts and prompt
// tools it registers and to send list_changed. fn must not block; two
// reloads finishing together may call it concurrently, so it reads
// [Handle.Current] rather than trusting the order of calls.
func (h *Handle) OnPublish(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onPublish = append(h.onPublish, fn)
}

// New resolves the boot catalog in Retain mode, as a reload does: a
// broken prompt is served as a broken entry (list_prompts shows its
// problem, run_prompt refuses it with that problem) and logged once, so
// one bad file does not keep every healthy prompt from being served. Only
// catalog-level faults (a bad pattern, a stale [prompts.NAME] override, a
// duplicate name, nothing to serve) fail; the error is a *Error listing
// every fault. check resolves in Reject mode instead, so CI still catches
// a broken prompt before it is served. New then builds the retrieval index
// and publishes generation 0; a retrieval failure is logged and leaves the
// index idle, it never fails the boot.
func New(ctx context.Context, s Settings, opts Options) (*Handle, error) {
	c, err := Resolve(ctx, s, Retain)
	if err != nil {
		return nil, err
	}
	h := &Handle{
		roots:      slices.Clone(s.Roots),
		log:        opts.Logger,
		configPath: opts.ConfigPath,
		slots:      make(chan struct{}, MaxConcurrentRankings),
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	for _, e := range c.All() {
		if e.Broken() {
			h.log.Warn("a prompt is broken and is served only as a broken entry until its file is fixed",
				"prompt", e.Name(), "path", e.Path(), "problem", e.Problem())
		}
	}
	if !opts.NoRetrieval {
		h.ranker, h.policy = opts.Ranker, match.RetrievalPolicy()
		if h.ranker == nil {
			h.ranker, h.policy = match.NewLexical(), match.LexicalRetrievalPolicy()
		}
		if opts.RetrievalPolicy != nil {
			h.policy = *opts.RetrievalPolicy
		}
	}
	var r *retrieval
	if h.ranker != nil {
		// Built now, not on first use: a ranker that cannot index at boot
		// should say so in the boot log, not in the first caller's answer.
		ix, err := buildRetrieval(ctx, h.ranker, c)
		if err != nil {
			h.log.Error("need_prompt cannot answer: retrieval index build failed", "error", err)
		} else {
			r = builtRetrieval(ix)
			h.log.Info("need_prompt ranks the catalog", "prompts", len(ix.names))
		}
	}
	h.current.Store(&Generation{catalog: c, retrieval: r, slots: h.slots, policy: h.policy})
	return h, nil
}

// Current is the live generation. Take it once per call and keep it.
func (h *Handle) Current() *Generation { return h.current.Load() }

// Roots are the prompts directories resolution uses, fixed at boot.
func (h *Handle) Roots() []string { return slices.Clone(h.roots) }

// RetrievalEnabled reports whether the Handle was built with retrieval
// ([Options.NoRetrieval] false), so its generations can rank prompts for
// need_prompt. It is fixed at boot; whether the current index can answer
// is the generation's Retrieval.
func (h *Handle) RetrievalEnabled() bool { return h.ranker != nil }

// Shutdown stops publishing: a reload in progress, or any later one, is
// dropped. It is what makes "no reload after the shutdown signal" hold.
func (h *Handle) Shutdown() {
	h.mu.Lock()
	h.shutdown = true
	h.mu.Unlock()
}

// ReloadErrorKind says which half of a reload failed.
type ReloadErrorKind uint8

const (
	// ReloadConfig: prompts.toml would not load.
	ReloadConfig ReloadErrorKind = iota + 1
	// ReloadCatalog: the new catalog would not resolve.
	ReloadCatalog
)

// ReloadError is a reload that kept the previous generation.
type ReloadError struct {
	Kind ReloadErrorKind
	Err  error
}

func (e *ReloadError) Error() string {
	if e.Kind == ReloadConfig {
		return "the configuration would not load: " + e.Err.Error()
	}
	return "the candidate would not resolve: " + e.Err.Error()
}

func (e *ReloadError) Unwrap() error { return e.Err }

// ReloadOutcome describes a reload that resolved.
type ReloadOutcome struct {
	// Ticket orders this reload among all reloads of the Handle.
	Ticket uint64
	// Published is false when a newer reload had already published, or
	// the Handle was shut down.
	Published bool
	// Prompts and Broken count the new catalog's entries.
	Prompts, Broken int
	// RankingChanged: some name, description or health changed, so the
	// new generation's retrieval index is pending (built on first use)
	// unless retrieval is idle.
	RankingChanged bool
	// RetrievalStale: the index carried forward is an older catalog's.
	RetrievalStale bool
	// RetrievalPending: the new generation's index will be built by its
	// first Shortlist; until then no index has been built for it.
	RetrievalPending bool

	// catalog is the resolved catalog, published or not.
	catalog *Catalog
	// patched: the catalog was patched from the changed paths alone
	// rather than resolved in full.
	patched bool
}

// Reload re-reads prompts.toml through load and re-resolves the catalog in
// Retain mode, reusing the parses of unchanged files. The roots stay the
// boot roots whatever the file now says. On failure the previous
// generation stays live and the error is a *ReloadError. A reload that
// finishes after a newer one has published is dropped, because its
// ticket is claimed before anything is read.
func (h *Handle) Reload(ctx context.Context, load LoadFunc) (ReloadOutcome, error) {
	return h.reload(ctx, load, nil)
}

// reload is Reload told, when changes is not nil, which paths changed
// since the catalog changes.since: when that is still the live catalog
// it is patched (see patch) instead of resolved in full.
func (h *Handle) reload(ctx context.Context, load LoadFunc, changes *changeSet) (ReloadOutcome, error) {
	out := ReloadOutcome{Ticket: h.tickets.Add(1)}
	s, ignored, err := load(ctx)
	if err != nil {
		return out, h.keepPrevious(ctx, &ReloadError{Kind: ReloadConfig, Err: err})
	}
	if len(ignored) > 0 {
		h.log.Info("a changed setting does not reload; restart to apply it", "config", h.configPath, "settings", strings.Join(ignored, ", "))
	}
	s.Roots = h.roots
	prev := h.current.Load()
	var cand *Catalog
	if changes != nil && changes.since == prev.catalog {
		cand, out.patched = patch(ctx, s, prev.catalog, changes.paths)
	}
	if !out.patched {
		if cand, err = resolve(ctx, s, Retain, prev.catalog.tree); err != nil {
			return out, h.keepPrevious(ctx, &ReloadError{Kind: ReloadCatalog, Err: err})
		}
	}
	out.catalog = cand
	out.Prompts, out.Broken = cand.Len(), cand.BrokenCount()
	out.RankingChanged = prev.catalog.Hash() != cand.Hash()

	// An unchanged hash carries the very same retrieval forward, built or
	// not. A changed one defers the build to the first Shortlist: indexing
	// every prompt would cost a one-file reload more than resolving did.
	r := prev.retrieval
	if out.RankingChanged && r.state() != RetrievalIdle {
		r = pendingRetrieval(h.ranker, h.log, cand, r.latest())
	}
	state := r.state()
	out.RetrievalStale = state == RetrievalStale
	out.RetrievalPending = state == RetrievalPending

	ranking := "unchanged"
	if out.RankingChanged {
		ranking = "changed"
	}
	// An idle index reports "current" as it always has: nothing is stale.
	fresh := "current"
	if state == RetrievalStale || state == RetrievalPending {
		fresh = state.String()
	}
	// Logged once published: an operator (or a test) reading "reloaded"
	// expects the new prompts to be served already.
	out.Published = h.publish(&Generation{catalog: cand, retrieval: r, ticket: out.Ticket, slots: h.slots, policy: h.policy})
	if !out.Published {
		h.log.Debug("a newer reload superseded this one before it was published")
		return out, nil
	}
	h.log.Info("reloaded the catalog", "prompts", out.Prompts, "broken", out.Broken, "ranking", ranking, "retrieval", fresh)
	h.mu.Lock()
	listeners := slices.Clone(h.onPublish)
	h.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
	return out, nil
}

func (h *Handle) keepPrevious(ctx context.Context, err *ReloadError) error {
	if ctx.Err() != nil {
		// Abandoned (shutdown), not failed: nothing for an operator to fix.
		h.log.Info("reload abandoned", "error", err)
		return err
	}
	h.log.Warn("reload keeps the previous catalog", "error", err)
	return err
}

// publish swaps g in unless the Handle is shut down or a reload triggered
// later has already published.
func (h *Handle) publish(g *Generation) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shutdown || g.ticket <= h.published {
		return false
	}
	h.current.Store(g)
	h.published = g.ticket
	return true
}
