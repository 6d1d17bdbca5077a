package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/promptforge-go/promptforge/internal/match"
)

// sixPrompts is need_prompt's fixture catalog (the match package ranks
// the same descriptions in its own tests).
var sixPrompts = map[string]string{
	"code_review":          "Review a code change or diff and list bugs, risks and suggested fixes.",
	"meeting_minutes":      "Turn a meeting transcript into minutes with decisions and action items.",
	"paper_summary":        "Summarize a research paper: its question, method, findings and limits.",
	"release_notes":        "Draft release notes from a range of commits.",
	"stakeholder_position": "Build a stakeholder position report for one entity: where a person or organisation stands on an issue, with sources.",
	"translate_text":       "Translate text into another language, keeping its tone and formatting.",
}

func writeSix(t *testing.T, root string) {
	t.Helper()
	for name, desc := range sixPrompts {
		writeFile(t, root, name+".md", promptText(name, `"`+desc+`"`))
	}
}

func shortlistNames(t *testing.T, g *Generation, capability string) []string {
	t.Helper()
	es, err := g.Shortlist(context.Background(), capability, 3)
	if err != nil {
		t.Fatalf("Shortlist(%q): %v", capability, err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
		if got, ok := g.Catalog().Healthy(e.Name()); !ok || got != e {
			t.Errorf("%s does not resolve to a healthy entry of the same generation", e.Name())
		}
	}
	return out
}

func TestRetrievalRanksTheSixPrompts(t *testing.T) {
	root := t.TempDir()
	writeSix(t, root)
	h := newHandle(t, mdSettings(root), Options{})
	g := h.Current()
	if g.Retrieval() != RetrievalCurrent {
		t.Fatalf("retrieval = %v", g.Retrieval())
	}
	got := shortlistNames(t, g, "Build a stakeholder position report for one entity.")
	if len(got) == 0 || got[0] != "stakeholder_position" {
		t.Errorf("author-register need = %v, want it led by stakeholder_position", got)
	}
	// A capability that shares no term with any prompt lists none, rather
	// than three arbitrary names.
	if got := shortlistNames(t, g, "Quantum chromodynamics on a lattice"); len(got) != 0 {
		t.Errorf("unrelated need = %v, want none", got)
	}
	got = shortlistNames(t, g, "I need to know where Herb Sutter stands on ABI stability.")
	if !slices.Contains(got, "stakeholder_position") {
		t.Errorf("conversational need = %v, want stakeholder_position among them", got)
	}
	got = shortlistNames(t, g, "Draft release notes from a range of commits.")
	if len(got) == 0 || got[0] != "release_notes" {
		t.Errorf("release notes need = %v", got)
	}
}

func TestRetrievalIndexesHealthyEntriesOnly(t *testing.T) {
	c := catalogOf([]string{"alpha", "beta"}, "gamma")
	r, err := buildRetrieval(context.Background(), match.NewLexical(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.names, []string{"alpha", "beta"}) || r.idx.Len() != 2 {
		t.Errorf("indexed %v", r.names)
	}
	d := r.idx.Doc(0)
	if d.Group != "promptforge" || d.Name != "alpha" || d.Description != "About alpha." || !slices.Equal(d.Params, []string{"args"}) {
		t.Errorf("descriptor = %+v", d)
	}
}

func TestRetrievalWithNoHealthyPrompts(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "alpha", "First.")
	h := newHandle(t, mdSettings(root), Options{})
	writeFile(t, root, "a.md", "---\nname: alpha\npromptforge: 1\n---\n")
	reload(t, h, fixed(mdSettings(root)))
	if got := shortlistNames(t, h.Current(), "anything at all"); len(got) != 0 {
		t.Errorf("candidates = %v, want none", got)
	}
}

func TestRetrievalIdle(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "alpha", "First.")
	h := newHandle(t, mdSettings(root), Options{NoRetrieval: true})
	if _, err := h.Current().Shortlist(context.Background(), "first", 3); !errors.Is(err, ErrRetrievalUnavailable) {
		t.Errorf("err = %v, want ErrRetrievalUnavailable", err)
	}
	writePrompt(t, root, "a.md", "renamed", "First.")
	out := reload(t, h, fixed(mdSettings(root)))
	if h.Current().Retrieval() != RetrievalIdle || out.RetrievalStale {
		t.Errorf("an idle index did not stay idle: %v", h.Current().Retrieval())
	}
}

func TestRetrievalAcrossReloads(t *testing.T) {
	root := t.TempDir()
	writeSix(t, root)
	h := newHandle(t, mdSettings(root), Options{})
	g0 := h.Current()

	// Body-only edit: the very same index object is carried forward.
	p := filepath.Join(root, "release_notes.md")
	src, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), "return args", "return 'v2'", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	reload(t, h, fixed(mdSettings(root)))
	g1 := h.Current()
	if g1 == g0 || g1.retrieval != g0.retrieval {
		t.Errorf("body-only edit rebuilt the retrieval index")
	}

	// Rename: the new name is offered, the old one never is, and the old
	// generation still ranks its own catalog.
	os.Remove(p)
	writeFile(t, root, "notes.md", promptText("changelog_writer", `"`+sixPrompts["release_notes"]+`"`))
	out := reload(t, h, fixed(mdSettings(root)))
	g2 := h.Current()
	if !out.RankingChanged || g2.retrieval == g1.retrieval || g2.Retrieval() != RetrievalPending {
		t.Errorf("rename kept the index: %+v", out)
	}
	need := "Draft release notes from a range of commits."
	got := shortlistNames(t, g2, need)
	if g2.Retrieval() != RetrievalCurrent {
		t.Errorf("after the first Shortlist the index is %v, want current", g2.Retrieval())
	}
	if len(got) == 0 || got[0] != "changelog_writer" || slices.Contains(got, "release_notes") {
		t.Errorf("after rename = %v", got)
	}
	if old := shortlistNames(t, g1, need); len(old) == 0 || old[0] != "release_notes" {
		t.Errorf("old generation = %v", old)
	}
}

// failingRanker indexes once, then fails.
type failingRanker struct {
	calls atomic.Int32
}

func (f *failingRanker) Index(ctx context.Context, docs []match.Doc) (match.Index, error) {
	if f.calls.Add(1) > 1 {
		return nil, errors.New("embedding endpoint unavailable")
	}
	return match.NewLexical().Index(ctx, docs)
}

func TestRetrievalGoesStaleWhenRebuildFails(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "alpha", "Summarize a paper.")
	writePrompt(t, root, "b.md", "beta", "Translate text.")
	logs := &logBuffer{}
	ranker := &failingRanker{}
	h := newHandle(t, mdSettings(root), Options{Ranker: ranker, Logger: logs.logger()})
	boot := h.Current().retrieval.latest()
	writePrompt(t, root, "a.md", "alpha_two", "Summarize a paper.")
	out := reload(t, h, fixed(mdSettings(root)))
	if !out.Published || out.RetrievalStale || !out.RetrievalPending || h.Current().Retrieval() != RetrievalPending {
		t.Fatalf("outcome = %+v, state %v", out, h.Current().Retrieval())
	}
	if !strings.Contains(logs.String(), "ranking=changed retrieval=pending") || ranker.calls.Load() != 1 {
		t.Errorf("the reload built the index (%d builds); logs:\n%s", ranker.calls.Load(), logs)
	}
	// The first Shortlist builds, fails, and settles on the boot index.
	// That index still knows "alpha", which no longer resolves: it is
	// left out rather than offered.
	for _, n := range shortlistNames(t, h.Current(), "Summarize a paper.") {
		if n == "alpha" {
			t.Errorf("a name missing from the live catalog was offered")
		}
	}
	if h.Current().Retrieval() != RetrievalStale || h.Current().retrieval.latest() != boot {
		t.Errorf("after the failed build: %v", h.Current().Retrieval())
	}
	if !strings.Contains(logs.String(), `msg="need_prompt keeps its previous index" error=`) {
		t.Errorf("logs:\n%s", logs)
	}
	// A genuine failure is settled, not retried on every call.
	shortlistNames(t, h.Current(), "Translate text.")
	if n := ranker.calls.Load(); n != 2 {
		t.Errorf("%d builds, want 2 (boot and the one failed rebuild)", n)
	}
	// A body-only edit carries the stale index forward as it is.
	p := filepath.Join(root, "b.md")
	src, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), "return args", "return 'v2'", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := h.Current().retrieval
	out = reload(t, h, fixed(mdSettings(root)))
	if !out.RetrievalStale || out.RetrievalPending || h.Current().retrieval != stale ||
		!strings.Contains(logs.String(), "ranking=unchanged retrieval=stale") {
		t.Errorf("outcome = %+v; logs:\n%s", out, logs)
	}
}

// gatedRanker is the lexical ranker with a gate: after its first build
// (the boot index), each build reports itself on entered and then waits
// for release, or for its ctx to end, which fails it.
type gatedRanker struct {
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func newGatedRanker() *gatedRanker {
	return &gatedRanker{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gatedRanker) Index(ctx context.Context, docs []match.Doc) (match.Index, error) {
	if g.calls.Add(1) > 1 {
		g.entered <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return match.NewLexical().Index(ctx, docs)
}

// pendingHandle boots the six-prompt catalog with ranker and renames
// release_notes, so the live generation's retrieval is pending.
func pendingHandle(t *testing.T, ranker match.Ranker, logs *logBuffer) *Handle {
	t.Helper()
	root := t.TempDir()
	writeSix(t, root)
	h := newHandle(t, mdSettings(root), Options{Ranker: ranker, Logger: logs.logger()})
	writeFile(t, root, "release_notes.md", promptText("changelog_writer", `"`+sixPrompts["release_notes"]+`"`))
	if out := reload(t, h, fixed(mdSettings(root))); !out.RetrievalPending {
		t.Fatalf("outcome = %+v, want a pending index", out)
	}
	return h
}

func TestPendingRetrievalBuildsOnceForConcurrentCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ranker := newGatedRanker()
		h := pendingHandle(t, ranker, &logBuffer{})
		g := h.Current()
		need := "Draft release notes from a range of commits."
		results := make([][]string, MaxConcurrentRankings)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i] = shortlistNames(t, g, need) })
		}
		synctest.Wait()
		if n := ranker.calls.Load(); n != 2 || len(ranker.entered) != 1 {
			t.Fatalf("%d builds started for %d callers, want one (after boot's)", n-1, len(results))
		}
		if g.Retrieval() != RetrievalPending {
			t.Errorf("state during the build = %v", g.Retrieval())
		}
		close(ranker.release)
		wg.Wait()
		for _, got := range results {
			if len(got) == 0 || got[0] != "changelog_writer" || slices.Contains(got, "release_notes") {
				t.Errorf("shortlist = %v, want changelog_writer first and never the old name", got)
			}
		}
		if g.Retrieval() != RetrievalCurrent || ranker.calls.Load() != 2 {
			t.Errorf("after the build: %v, %d builds", g.Retrieval(), ranker.calls.Load())
		}
		if p := g.retrieval.phase.Load(); p.fallback != nil || p.catalog != nil {
			t.Errorf("a built retrieval still holds its build inputs")
		}
	})
}

func TestCancelledBuildLeavesRetrievalPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ranker := newGatedRanker()
		logs := &logBuffer{}
		h := pendingHandle(t, ranker, logs)
		g := h.Current()
		need := "Draft release notes from a range of commits."

		// The first caller starts the build and gives up during it; a
		// second caller, waiting for that build, gives up too.
		first, cancelFirst := context.WithCancel(context.Background())
		second, cancelSecond := context.WithCancel(context.Background())
		errs := make(chan error, 2)
		go func() { _, err := g.Shortlist(first, need, 3); errs <- err }()
		<-ranker.entered
		go func() { _, err := g.Shortlist(second, need, 3); errs <- err }()
		synctest.Wait()
		cancelSecond()
		if err := <-errs; err == nil || !strings.HasPrefix(err.Error(), "rank prompts for the capability: wait for the retrieval index to be built: ") ||
			!errors.Is(err, context.Canceled) {
			t.Errorf("waiter's error = %v", err)
		}
		cancelFirst()
		if err := <-errs; err == nil || !strings.HasPrefix(err.Error(), "rank prompts for the capability: build the retrieval index") ||
			!errors.Is(err, context.Canceled) {
			t.Errorf("builder's error = %v", err)
		}
		if g.Retrieval() != RetrievalPending || strings.Contains(logs.String(), "keeps its previous index") {
			t.Fatalf("a cancelled build settled the index: %v\n%s", g.Retrieval(), logs)
		}

		// The next caller builds afresh and gets this generation's answer.
		close(ranker.release)
		got := shortlistNames(t, g, need)
		if len(got) == 0 || got[0] != "changelog_writer" {
			t.Errorf("after a cancelled build, shortlist = %v", got)
		}
		if g.Retrieval() != RetrievalCurrent || ranker.calls.Load() != 3 {
			t.Errorf("state %v after %d builds", g.Retrieval(), ranker.calls.Load())
		}
	})
}

func TestPendingRetrievalAcrossReloads(t *testing.T) {
	root := t.TempDir()
	writeSix(t, root)
	logs := &logBuffer{}
	ranker := &failingRanker{}
	h := newHandle(t, mdSettings(root), Options{Ranker: ranker, Logger: logs.logger()})
	boot := h.Current().retrieval

	// Two ranking changes with no need_prompt between them: both stay
	// pending, and the second falls back to the boot index, not to the
	// unbuilt first one, so fallbacks never chain.
	writeFile(t, root, "release_notes.md", promptText("changelog_writer", `"`+sixPrompts["release_notes"]+`"`))
	reload(t, h, fixed(mdSettings(root)))
	g1 := h.Current()
	writeFile(t, root, "code_review.md", promptText("code_review", `"Review a pull request."`))
	reload(t, h, fixed(mdSettings(root)))
	g2 := h.Current()
	if g1.retrieval == g2.retrieval || g2.Retrieval() != RetrievalPending {
		t.Fatalf("second change: %v, shared %v", g2.Retrieval(), g1.retrieval == g2.retrieval)
	}
	if g2.retrieval.latest() != boot.latest() {
		t.Errorf("the second pending index does not fall back to the boot index")
	}

	// A body-only edit carries the pending retrieval forward as the same
	// object, and a build through either generation serves both.
	p := filepath.Join(root, "paper_summary.md")
	src, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), "return args", "return 'v2'", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := reload(t, h, fixed(mdSettings(root)))
	g3 := h.Current()
	if out.RankingChanged || !out.RetrievalPending || g3.retrieval != g2.retrieval ||
		!strings.Contains(logs.String(), "ranking=unchanged retrieval=pending") {
		t.Fatalf("body-only edit over a pending index: %+v\n%s", out, logs)
	}
	// failingRanker fails every build after boot's: the shared retrieval
	// goes stale on the boot index, and each generation offers only what
	// its own catalog holds healthy.
	need := "Draft release notes from a range of commits."
	if got := shortlistNames(t, g3, need); slices.Contains(got, "release_notes") {
		t.Errorf("stale shortlist offered a renamed prompt: %v", got)
	}
	if g2.Retrieval() != RetrievalStale || ranker.calls.Load() != 2 {
		t.Errorf("g2 = %v after %d builds, want stale through the shared object", g2.Retrieval(), ranker.calls.Load())
	}
	if g1.Retrieval() != RetrievalPending {
		t.Errorf("g1 = %v, want it untouched by g2's build", g1.Retrieval())
	}
}

func TestBootRetrievalFailureIsIdleNotFatal(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "alpha", "First.")
	r := &failingRanker{}
	r.calls.Store(1)
	logs := &logBuffer{}
	h := newHandle(t, mdSettings(root), Options{Ranker: r, Logger: logs.logger()})
	if h.Current().Retrieval() != RetrievalIdle {
		t.Errorf("retrieval = %v, want idle", h.Current().Retrieval())
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="need_prompt cannot answer: retrieval index build failed" error=`) {
		t.Errorf("logs:\n%s", logs)
	}
}

// gatedIndex blocks every Score until released, counting callers inside.
type gatedIndex struct {
	match.Index
	inside  atomic.Int32
	release chan struct{}
}

func (g *gatedIndex) Score(ctx context.Context, need string) ([]float64, error) {
	g.inside.Add(1)
	<-g.release
	return g.Index.Score(ctx, need)
}

func TestRankingSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base, err := match.NewLexical().Index(context.Background(), []match.Doc{match.PromptDoc("alpha", "First.")})
		if err != nil {
			t.Fatal(err)
		}
		gi := &gatedIndex{Index: base, release: make(chan struct{})}
		slots := make(chan struct{}, MaxConcurrentRankings)
		g := &Generation{
			catalog:   catalogOf([]string{"alpha"}),
			retrieval: builtRetrieval(&index{idx: gi, names: []string{"alpha"}}),
			slots:     slots,
			policy:    match.LexicalRetrievalPolicy(),
		}
		var wg sync.WaitGroup
		for range MaxConcurrentRankings + 1 {
			wg.Go(func() {
				if _, err := g.Shortlist(context.Background(), "first", 3); err != nil {
					t.Errorf("Shortlist: %v", err)
				}
			})
		}
		synctest.Wait()
		if n := gi.inside.Load(); n != MaxConcurrentRankings {
			t.Fatalf("%d rankings running, want %d", n, MaxConcurrentRankings)
		}
		// A caller that gives up while waiting for a slot is told so.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := g.Shortlist(ctx, "first", 3); err == nil || !strings.HasPrefix(err.Error(), "acquire a ranking slot: ") {
			t.Errorf("cancelled wait: %v", err)
		}
		gi.release <- struct{}{}
		synctest.Wait()
		if n := gi.inside.Load(); n != MaxConcurrentRankings+1 {
			t.Errorf("the fifth ranking did not start when a slot came free (%d)", n)
		}
		close(gi.release)
		wg.Wait()
	})
}
