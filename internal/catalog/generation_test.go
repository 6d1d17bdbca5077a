package catalog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects log output from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newHandle(t *testing.T, s Settings, opts Options) *Handle {
	t.Helper()
	h, err := New(context.Background(), s, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h
}

// fixed is a LoadFunc that always yields s.
func fixed(s Settings) LoadFunc {
	return func(context.Context) (Settings, []string, error) { return s, nil, nil }
}

func reload(t *testing.T, h *Handle, load LoadFunc) ReloadOutcome {
	t.Helper()
	out, err := h.Reload(context.Background(), load)
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	return out
}

func TestHashTracksNamesAndDescriptionsOnly(t *testing.T) {
	root := t.TempDir()
	p := writePrompt(t, root, "a.md", "alpha", "First.")
	writePrompt(t, root, "b.md", "beta", "Second.")
	s := mdSettings(root)
	h0 := mustResolve(t, s, Retain).Hash()
	if h1 := mustResolve(t, s, Retain).Hash(); h1 != h0 {
		t.Errorf("hash differs across re-resolution")
	}
	if err := os.WriteFile(p, []byte(strings.Replace(promptText("alpha", "First."), "return args", "return args .. '!'", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if h := mustResolve(t, s, Retain).Hash(); h != h0 {
		t.Errorf("a body-only edit changed the hash")
	}
	writePrompt(t, root, "a.md", "alpha", "First, edited.")
	hDesc := mustResolve(t, s, Retain).Hash()
	if hDesc == h0 {
		t.Errorf("a description edit kept the hash")
	}
	writePrompt(t, root, "a.md", "alpha_two", "First, edited.")
	if h := mustResolve(t, s, Retain).Hash(); h == hDesc {
		t.Errorf("a name-only edit kept the hash")
	}
	// A healthy prompt turning broken under the same name and an empty
	// description still changes what can be retrieved.
	sealed := func(e *entry) []*entry { e.seal(); return []*entry{e} }
	healthy := newCatalog(sealed(&entry{name: "x", path: "x.md"}), nil)
	broken := newCatalog(sealed(&entry{name: "x", path: "x.md", kind: KindUnparsable, problem: "p"}), nil)
	if healthy.Hash() == broken.Hash() {
		t.Errorf("health is not part of the hash")
	}
}

func TestHeldSnapshotSurvivesSwap(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "alpha", "First.")
	h := newHandle(t, mdSettings(root), Options{})
	before := h.Current()
	writePrompt(t, root, "a.md", "renamed", "First.")
	reload(t, h, fixed(mdSettings(root)))
	if got := entryNames(before.Catalog()); !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("held snapshot = %v", got)
	}
	if got := entryNames(h.Current().Catalog()); !slices.Equal(got, []string{"renamed"}) {
		t.Errorf("new snapshot = %v, want the old name gone", got)
	}
}

func TestReload(t *testing.T) {
	setup := func(t *testing.T) (string, *Handle, *logBuffer) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "alpha", "First.")
		writePrompt(t, root, "b.md", "beta", "Second.")
		logs := &logBuffer{}
		return root, newHandle(t, mdSettings(root), Options{Logger: logs.logger(), ConfigPath: "prompts.toml"}), logs
	}

	t.Run("description edit", func(t *testing.T) {
		root, h, logs := setup(t)
		before := h.Current()
		writePrompt(t, root, "a.md", "alpha", "First, edited.")
		out := reload(t, h, fixed(mdSettings(root)))
		if !out.Published || !out.RankingChanged || out.RetrievalStale || !out.RetrievalPending {
			t.Errorf("outcome = %+v", out)
		}
		if d := entryNamed(t, h.Current().Catalog(), "alpha").Description(); d != "First, edited." {
			t.Errorf("live description = %q", d)
		}
		if d := entryNamed(t, before.Catalog(), "alpha").Description(); d != "First." {
			t.Errorf("earlier snapshot's description = %q", d)
		}
		if !strings.Contains(logs.String(), `msg="reloaded the catalog" prompts=2 broken=0 ranking=changed retrieval=pending`) {
			t.Errorf("logs lack the summary:\n%s", logs)
		}
	})

	t.Run("body-only edit", func(t *testing.T) {
		root, h, _ := setup(t)
		if err := os.WriteFile(filepath.Join(root, "a.md"),
			[]byte(strings.Replace(promptText("alpha", "First."), "return args", "return 'new body'", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := reload(t, h, fixed(mdSettings(root)))
		if out.RankingChanged || out.RetrievalStale || out.RetrievalPending || !out.Published {
			t.Errorf("outcome = %+v, want {ranking unchanged, current, published}", out)
		}
		if src := entryNamed(t, h.Current().Catalog(), "alpha").Source(); !strings.Contains(src, "new body") {
			t.Errorf("live source is the old body")
		}
	})

	t.Run("file joins and leaves", func(t *testing.T) {
		root, h, _ := setup(t)
		writePrompt(t, root, "c.md", "gamma", "Third.")
		reload(t, h, fixed(mdSettings(root)))
		if n := h.Current().Catalog().Len(); n != 3 {
			t.Errorf("after adding: %d entries", n)
		}
		for _, f := range []string{"b.md", "c.md"} {
			if err := os.Remove(filepath.Join(root, f)); err != nil {
				t.Fatal(err)
			}
		}
		reload(t, h, fixed(mdSettings(root)))
		if got := entryNames(h.Current().Catalog()); !slices.Equal(got, []string{"alpha"}) {
			t.Errorf("after deleting: %v", got)
		}
	})

	t.Run("broken edit stays listed", func(t *testing.T) {
		root, h, _ := setup(t)
		writeFile(t, root, "a.md", "---\nname: alpha\npromptforge: 1\n---\n# no description\n")
		out := reload(t, h, fixed(mdSettings(root)))
		if !out.Published || out.Broken != 1 || out.Prompts != 2 {
			t.Errorf("outcome = %+v", out)
		}
		c := h.Current().Catalog()
		if e := entryNamed(t, c, "a"); !e.Broken() || !strings.Contains(e.Problem(), "does not parse") {
			t.Errorf("a = %v %q", e.Broken(), e.Problem())
		}
		if e, err := c.Lookup("beta"); err != nil || e.Broken() {
			t.Errorf("beta = %v, %v", e, err)
		}
	})

	t.Run("empty catalog keeps the previous generation", func(t *testing.T) {
		root, h, logs := setup(t)
		before := h.Current()
		os.Remove(filepath.Join(root, "a.md"))
		os.Remove(filepath.Join(root, "b.md"))
		_, err := h.Reload(context.Background(), fixed(mdSettings(root)))
		var re *ReloadError
		if !errors.As(err, &re) || re.Kind != ReloadCatalog {
			t.Fatalf("err = %v, want a catalog-kind ReloadError", err)
		}
		if h.Current() != before || before.Catalog().Len() != 2 {
			t.Errorf("the previous generation was replaced")
		}
		if !strings.Contains(logs.String(), `msg="reload keeps the previous catalog" error="the candidate would not resolve: catalog has 1 fault`) {
			t.Errorf("logs:\n%s", logs)
		}
	})

	t.Run("config failure keeps the previous generation", func(t *testing.T) {
		_, h, logs := setup(t)
		before := h.Current()
		bad := func(context.Context) (Settings, []string, error) {
			return Settings{}, nil, errors.New("parse config: expected '='")
		}
		_, err := h.Reload(context.Background(), bad)
		var re *ReloadError
		if !errors.As(err, &re) || re.Kind != ReloadConfig {
			t.Fatalf("err = %v, want a config-kind ReloadError", err)
		}
		if h.Current() != before {
			t.Errorf("the previous generation was replaced")
		}
		if !strings.Contains(logs.String(), `msg="reload keeps the previous catalog" error="the configuration would not load: parse config: expected '='"`) {
			t.Errorf("logs:\n%s", logs)
		}
	})

	t.Run("ignored settings are reported and the root stays", func(t *testing.T) {
		root, h, logs := setup(t)
		elsewhere := t.TempDir()
		writePrompt(t, elsewhere, "z.md", "zeta", "Elsewhere.")
		load := func(context.Context) (Settings, []string, error) {
			s := mdSettings(elsewhere)
			return s, []string{"[server].bind", "[server].watch_debounce"}, nil
		}
		out := reload(t, h, load)
		if !out.Published {
			t.Errorf("not published")
		}
		if got := entryNames(h.Current().Catalog()); !slices.Equal(got, []string{"alpha", "beta"}) {
			t.Errorf("resolved %v: the root moved away from %s", got, root)
		}
		if !strings.Contains(logs.String(), `msg="a changed setting does not reload; restart to apply it" config=prompts.toml settings="[server].bind, [server].watch_debounce"`) {
			t.Errorf("logs:\n%s", logs)
		}
	})

	t.Run("shutdown publishes nothing", func(t *testing.T) {
		root, h, _ := setup(t)
		before := h.Current()
		h.Shutdown()
		writePrompt(t, root, "c.md", "gamma", "Third.")
		if out := reload(t, h, fixed(mdSettings(root))); out.Published {
			t.Errorf("published after shutdown")
		}
		if h.Current() != before {
			t.Errorf("generation changed after shutdown")
		}
	})

	t.Run("awkward values round-trip", func(t *testing.T) {
		root, h, _ := setup(t)
		want := "Say \"hi\"\\n then\ttab\nand a second line"
		writeFile(t, root, "a.md", "---\nname: alpha\ndescription: \"Say \\\"hi\\\"\\\\n then\\ttab\\nand a second line\"\npromptforge: 1\n---\n# A\n\n## Run\n\n```lua\nreturn args\n```\n")
		reload(t, h, fixed(mdSettings(root)))
		if got := entryNamed(t, h.Current().Catalog(), "alpha").Description(); got != want {
			t.Errorf("description = %q, want %q", got, want)
		}
	})
}

func TestReloadTicketsOrderPublishing(t *testing.T) {
	for _, shared := range []bool{true, false} {
		name := "one loader"
		if !shared {
			name = "two loaders sharing a handle"
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writePrompt(t, root, "a.md", "alpha", "Boot.")
			h := newHandle(t, mdSettings(root), Options{})

			entered, release := make(chan struct{}), make(chan struct{})
			var calls sync.Mutex
			first := true
			slow := func(ctx context.Context) (Settings, []string, error) {
				calls.Lock()
				isFirst := first
				first = false
				calls.Unlock()
				if isFirst {
					close(entered)
					<-release
				}
				return mdSettings(root), nil, nil
			}
			other := slow
			if !shared {
				other = fixed(mdSettings(root))
			}

			older := make(chan ReloadOutcome)
			go func() {
				out, err := h.Reload(context.Background(), slow)
				if err != nil {
					t.Errorf("older reload: %v", err)
				}
				older <- out
			}()
			<-entered // the older reload holds ticket 1 and is reading

			writePrompt(t, root, "a.md", "alpha", "Newer.")
			newer := reload(t, h, other)
			if !newer.Published || newer.Ticket != 2 {
				t.Fatalf("newer = %+v", newer)
			}
			close(release)
			old := <-older
			if old.Ticket != 1 || old.Published {
				t.Errorf("older = %+v, want ticket 1 dropped", old)
			}
			if g := h.Current(); g.Ticket() != 2 || entryNamed(t, g.Catalog(), "alpha").Description() != "Newer." {
				t.Errorf("live generation is ticket %d", g.Ticket())
			}
		})
	}
}

func TestReloadReusesUnchangedParses(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "alpha", "First.")
	writePrompt(t, root, "b.md", "beta", "Second.")
	s := mdSettings(root)
	c0, err := resolve(context.Background(), s, Retain, nil)
	if err != nil {
		t.Fatal(err)
	}
	a0 := entryNamed(t, c0, "alpha").Prompt()
	b0 := entryNamed(t, c0, "beta").Prompt()

	// Same bytes, fresh timestamps: read again, parse reused.
	c1, err := resolve(context.Background(), s, Retain, c0.tree)
	if err != nil {
		t.Fatal(err)
	}
	if entryNamed(t, c1, "alpha").Prompt() != a0 {
		t.Errorf("identical bytes were parsed again")
	}

	// A record read well after the file's timestamp proves the file
	// unchanged by (size, mtime) alone: it is not reopened, which shows as
	// same-size different bytes under the old timestamp going unseen.
	aged := agedTree(c1.tree)
	bPath := filepath.Join(root, "b.md")
	bInfo, err := os.Stat(bPath)
	if err != nil {
		t.Fatal(err)
	}
	writePrompt(t, root, "b.md", "beta", "Sekond.")
	if err := os.Chtimes(bPath, bInfo.ModTime(), bInfo.ModTime()); err != nil {
		t.Fatal(err)
	}
	c2, err := resolve(context.Background(), s, Retain, aged)
	if err != nil {
		t.Fatal(err)
	}
	if e := entryNamed(t, c2, "beta"); e.Prompt() != b0 || e.Description() != "Second." {
		t.Errorf("a stat-identical file with a trusted timestamp was reopened")
	}

	// A real edit is parsed anew.
	writePrompt(t, root, "a.md", "alpha", "Edited.")
	c3, err := resolve(context.Background(), s, Retain, aged)
	if err != nil {
		t.Fatal(err)
	}
	if e := entryNamed(t, c3, "alpha"); e.Prompt() == a0 || e.Description() != "Edited." {
		t.Errorf("an edited file kept its old parse")
	}
}

func TestRacyTimestampsAreNotTrusted(t *testing.T) {
	root := t.TempDir()
	p := writePrompt(t, root, "a.md", "alpha", "First.")
	s := mdSettings(root)
	c0, err := resolve(context.Background(), s, Retain, nil)
	if err != nil {
		t.Fatal(err)
	}
	info0, _ := os.Stat(p)
	// Same size, same timestamp, different bytes: what a second save
	// within one timestamp tick looks like.
	writePrompt(t, root, "a.md", "alpha", "Secnd.")
	if err := os.Chtimes(p, info0.ModTime(), info0.ModTime()); err != nil {
		t.Fatal(err)
	}
	c1, err := resolve(context.Background(), s, Retain, c0.tree)
	if err != nil {
		t.Fatal(err)
	}
	if d := entryNamed(t, c1, "alpha").Description(); d != "Secnd." {
		t.Errorf("description = %q: a timestamp inside the racy window was trusted", d)
	}
}

// The boot catalog keeps a broken prompt as a broken entry, as a reload
// does, and says so once in the log; only a catalog-level fault fails New.
func TestNewServesPastABrokenPrompt(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "good.md", "good", "A healthy prompt.")
	writeFile(t, root, "bad.md", "---\nname: bad\ndescription: no H1 follows\npromptforge: 1\n---\n\nprose without a heading\n")
	logs := &logBuffer{}
	h := newHandle(t, mdSettings(root), Options{Logger: logs.logger(), NoRetrieval: true})
	defer h.Shutdown()
	c := h.Current().Catalog()
	if c.Len() != 2 || c.BrokenCount() != 1 {
		t.Fatalf("catalog %v: want the healthy and the broken entry", entryNames(c))
	}
	if e, ok := c.Healthy("good"); !ok || e.Broken() {
		t.Fatalf("the healthy prompt is not served")
	}
	bad, err := c.Lookup("bad")
	if err != nil || !bad.Broken() || bad.Problem() == "" {
		t.Fatalf("the broken prompt: %v, %+v", err, bad)
	}
	if n := strings.Count(logs.String(), `msg="a prompt is broken`); n != 1 || !strings.Contains(logs.String(), "bad.md") {
		t.Fatalf("want one log line naming bad.md, got %d:\n%s", n, logs)
	}

	// Two files claiming one name leave nothing sensible to serve under it.
	writePrompt(t, root, "again.md", "good", "The same name twice.")
	if _, err := New(context.Background(), mdSettings(root), Options{NoRetrieval: true}); !errors.As(err, new(*Error)) {
		t.Fatalf("a duplicate name must still fail the boot, got %v", err)
	}
}

// agedTree is a copy of t whose every file was read well after its
// timestamp.
func agedTree(t *walkTree) *walkTree {
	var age func(n *dirNode) *dirNode
	age = func(n *dirNode) *dirNode {
		m := *n
		m.items = slices.Clone(n.items)
		for i, it := range m.items {
			switch {
			case it.dir != nil:
				m.items[i].dir = age(it.dir)
			case it.file != nil && it.file.state != nil:
				g, st := *it.file, *it.file.state
				st.readAt = st.modTime.Add(racyWindow + time.Second)
				g.state = &st
				m.items[i].file = &g
			}
		}
		return &m
	}
	out := *t
	out.roots = slices.Clone(t.roots)
	for i, n := range out.roots {
		if n != nil {
			out.roots[i] = age(n)
		}
	}
	return &out
}
