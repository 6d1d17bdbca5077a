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
	if !out.RankingChanged || g2.retrieval == g1.retrieval {
		t.Errorf("rename kept the index: %+v", out)
	}
	need := "Draft release notes from a range of commits."
	got := shortlistNames(t, g2, need)
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
	h := newHandle(t, mdSettings(root), Options{Ranker: &failingRanker{}, Logger: logs.logger()})
	writePrompt(t, root, "a.md", "alpha_two", "Summarize a paper.")
	out := reload(t, h, fixed(mdSettings(root)))
	if !out.Published || !out.RetrievalStale || h.Current().Retrieval() != RetrievalStale {
		t.Fatalf("outcome = %+v, state %v", out, h.Current().Retrieval())
	}
	if !strings.Contains(logs.String(), "need_prompt keeps its previous index: ") ||
		!strings.Contains(logs.String(), "ranking changed, retrieval stale") {
		t.Errorf("logs:\n%s", logs)
	}
	// The stale index still knows "alpha", which no longer resolves: it is
	// left out rather than offered.
	for _, n := range shortlistNames(t, h.Current(), "Summarize a paper.") {
		if n == "alpha" {
			t.Errorf("a name missing from the live catalog was offered")
		}
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
	if !strings.Contains(logs.String(), "need_prompt cannot answer: retrieval index build failed: ") {
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
			retrieval: &retrieval{idx: gi, names: []string{"alpha"}},
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
