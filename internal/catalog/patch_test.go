package catalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// sameCatalog fails unless got is, for every caller, the catalog want is:
// the same entries in the same order with the same fields, counts, hash,
// tools, and the same answer to every lookup.
func sameCatalog(t *testing.T, step string, got, want *Catalog) {
	t.Helper()
	if got.Len() != want.Len() || got.BrokenCount() != want.BrokenCount() {
		t.Fatalf("%s: %d entries (%d broken), want %d (%d): %v, want %v", step, got.Len(), got.BrokenCount(),
			want.Len(), want.BrokenCount(), entryNames(got), entryNames(want))
	}
	for i := range want.Len() {
		g, w := got.At(i).e, want.At(i).e
		if g.name != w.name || g.description != w.description || g.path != w.path || g.canonical != w.canonical ||
			g.kind != w.kind || g.problem != w.problem || g.source != w.source || (g.prompt == nil) != (w.prompt == nil) {
			t.Fatalf("%s: entry %d is %+v, want %+v", step, i, *g, *w)
		}
	}
	if got.Hash() != want.Hash() {
		t.Errorf("%s: hash differs from a full resolution's", step)
	}
	toolNames := func(c *Catalog) []string {
		var out []string
		for _, e := range c.Tools() {
			out = append(out, e.Name())
		}
		return out
	}
	if !slices.Equal(toolNames(got), toolNames(want)) || !slices.Equal(got.ToolPatterns(), want.ToolPatterns()) {
		t.Errorf("%s: tools %v, want %v", step, toolNames(got), toolNames(want))
	}
	var asked []string
	for _, e := range want.All() {
		asked = append(asked, e.Name(), normalize(e.Name()), fileStem(e.Path()))
	}
	asked = append(asked, "Gamma", "GAMMA", "no_such_prompt", "list-prompts (broken)")
	for _, name := range asked {
		ge, gerr := got.Lookup(name)
		we, werr := want.Lookup(name)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || ge.IsZero() != we.IsZero() || !ge.IsZero() && (ge.Path() != we.Path() || ge.Name() != we.Name()) {
			t.Errorf("%s: Lookup(%q) = %v %v, want %v %v", step, name, ge.e, gerr, we.e, werr)
		}
		gh, gok := got.Healthy(name)
		wh, wok := want.Healthy(name)
		if gok != wok || gok && gh.Path() != wh.Path() {
			t.Errorf("%s: Healthy(%q) = %v, want %v", step, name, gok, wok)
		}
	}
}

// TestPatchedReloadMatchesFullResolve edits a catalog step by step and,
// after each edit, reloads it told the paths the edit touched (as the
// watcher is) and compares the patched catalog with a full resolution of
// the same tree, so the two can never drift.
func TestPatchedReloadMatchesFullResolve(t *testing.T) {
	root := t.TempDir()
	s := Settings{Roots: []string{root}, Include: []string{"**/*.md"}, Exclude: []string{"drafts/**"}, Tools: []string{"tool_*"}}
	writePrompt(t, root, "alpha.md", "alpha", "First.")
	writePrompt(t, root, "sub/beta.md", "beta", "Second.")
	writePrompt(t, root, "sub/gamma.md", "gamma", "Third, which a broken file elsewhere is named like.")
	writePrompt(t, root, "tools/tool_one.md", "tool_one", "A prompt published as a tool.")
	writeFile(t, root, "notes/README.md", "# Not a prompt\n")
	writeFile(t, root, "other/Gamma.md", "---\nname: gamma\npromptforge: 1\n---\nno heading\n")
	writePrompt(t, root, "drafts/wip.md", "wip", "Excluded.")
	h := newHandle(t, s, Options{})

	broken := "---\nname: gamma\ndescription: [unclosed\npromptforge: 1\n---\n# G\n"
	remove := func(t *testing.T, rel string) []string {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		return []string{p}
	}
	steps := []struct {
		name string
		edit func(t *testing.T) []string // the paths the edit touched
	}{
		{"body edited", func(t *testing.T) []string {
			return []string{writeFile(t, root, "alpha.md", promptText("alpha", "First.")+"\nMore prose.\n")}
		}},
		{"description edited", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "sub/beta.md", "beta", "Second, edited.")}
		}},
		{"prompt added", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "sub/delta.md", "delta", "Fourth.")}
		}},
		{"directory of prompts added", func(t *testing.T) []string {
			writePrompt(t, root, "new/deep/epsilon.md", "epsilon", "Fifth.")
			writePrompt(t, root, "new/tool_two.md", "tool_two", "Another tool.")
			return []string{filepath.Join(root, "new")}
		}},
		{"prompt deleted", func(t *testing.T) []string { return remove(t, "sub/delta.md") }},
		{"prompt file renamed", func(t *testing.T) []string {
			from, to := filepath.Join(root, "alpha.md"), filepath.Join(root, "sub", "alpha_moved.md")
			if err := os.Rename(from, to); err != nil {
				t.Fatal(err)
			}
			return []string{from, to}
		}},
		{"saved by rename over the old file", func(t *testing.T) []string {
			tmp := writePrompt(t, root, "sub/.beta.md.swp", "beta", "Second, saved atomically.")
			to := filepath.Join(root, "sub", "beta.md")
			if err := os.Rename(tmp, to); err != nil {
				t.Fatal(err)
			}
			return []string{tmp, to}
		}},
		{"prompt renamed to sort after the entries that follow it", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "sub/alpha_moved.md", "zulu", "Renamed, now last.")}
		}},
		{"and back to sort first", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "sub/alpha_moved.md", "aardvark", "Renamed, now first.")}
		}},
		{"prompt renamed inside its file, leaving the tools", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "tools/tool_one.md", "one_no_more", "No longer a tool.")}
		}},
		{"a prompt others depend on broken: the other broken file loses its mark", func(t *testing.T) []string {
			return []string{writeFile(t, root, "sub/gamma.md", broken)}
		}},
		{"fixed again: the other broken file is marked again", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "sub/gamma.md", "gamma", "Third, fixed.")}
		}},
		{"the broken file fixed under another name", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "other/Gamma.md", "gamma_two", "Fixed.")}
		}},
		{"broken again under the healthy name's stem", func(t *testing.T) []string {
			return []string{writeFile(t, root, "other/Gamma.md", broken)}
		}},
		{"the healthy prompt deleted", func(t *testing.T) []string { return remove(t, "sub/gamma.md") }},
		{"and back", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "sub/gamma.md", "gamma", "Third, back.")}
		}},
		{"a reserved stem broken", func(t *testing.T) []string {
			return []string{writeFile(t, root, "list-prompts.md", broken)}
		}},
		{"markdown becomes a prompt", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "notes/README.md", "readme", "Now a prompt.")}
		}},
		{"an excluded file edited", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "drafts/wip.md", "wip", "Still excluded.")}
		}},
		{"a duplicate name: the reload fails as a full one would", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "sub/beta_copy.md", "beta", "A copy.")}
		}},
		{"the duplicate renamed", func(t *testing.T) []string {
			return []string{writePrompt(t, root, "sub/beta_copy.md", "beta_copy", "A copy, renamed.")}
		}},
		{"a directory removed", func(t *testing.T) []string {
			return append(remove(t, "new"), filepath.Join(root, "new", "tool_two.md"))
		}},
		{"a directory replaced by a file", func(t *testing.T) []string {
			remove(t, "notes")
			return []string{writePrompt(t, root, "notes", "notes_file", "Not .md, so not globbed."), filepath.Join(root, "notes", "README.md")}
		}},
	}
	for _, step := range steps {
		since := h.Current().Catalog()
		paths := step.edit(t)
		out, err := h.reload(context.Background(), fixed(s), &changeSet{since: since, paths: paths})
		want, wantErr := Resolve(context.Background(), s, Retain)
		if wantErr != nil {
			var re *ReloadError
			if !errors.As(err, &re) || re.Err.Error() != wantErr.Error() {
				t.Fatalf("%s: reload error %v, want the full resolution's %v", step.name, err, wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !out.patched {
			t.Errorf("%s: resolved in full, not patched", step.name)
		}
		got := h.Current().Catalog()
		sameCatalog(t, step.name, got, want)
		sharesTheRest(t, step.name, since, got)
	}
}

// sharesTheRest fails unless c is prev with Changes' dropped entries taken
// out and its added ones put in, every other entry being prev's own.
func sharesTheRest(t *testing.T, step string, prev, c *Catalog) {
	t.Helper()
	added, dropped, ok := c.Changes(prev)
	if !ok {
		t.Fatalf("%s: Changes does not know the catalog it was patched from", step)
	}
	if _, _, ok := c.Changes(c); ok {
		t.Errorf("%s: Changes answered for a catalog it was not patched from", step)
	}
	want := make(map[*entry]int)
	for _, e := range prev.All() {
		want[e.e]++
	}
	for _, e := range dropped {
		want[e.e]--
	}
	for _, e := range added {
		if want[e.e] > 0 {
			t.Errorf("%s: %q is reported added but was already there", step, e.Name())
		}
		want[e.e]++
	}
	for _, e := range c.All() {
		want[e.e]--
	}
	for e, n := range want {
		if n != 0 {
			t.Errorf("%s: entry %q (%s) counted %d times off", step, e.name, e.path, n)
		}
	}
}

// A patch gives way to a full resolution where it could not match one.
func TestPatchFallsBackToFullResolution(t *testing.T) {
	ctx := context.Background()
	t.Run("a link in the tree", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "alpha", "First.")
		// Dangling now: what it reaches would change with no event in
		// the directory it is in.
		if err := os.Symlink(filepath.Join(root, "later.md"), filepath.Join(root, "b.md")); err != nil {
			t.Skip("no symlinks here:", err)
		}
		c := mustResolve(t, mdSettings(root), Retain)
		if _, ok := patch(ctx, mdSettings(root), c, []string{filepath.Join(root, "a.md")}); ok {
			t.Errorf("patched a tree with a symbolic link")
		}
	})
	t.Run("[prompts.NAME] blocks", func(t *testing.T) {
		root := t.TempDir()
		p := writePrompt(t, root, "a.md", "alpha", "First.")
		writePrompt(t, root, "b.md", "beta", "Second.")
		s := mdSettings(root)
		s.Blocks = map[string]Block{"beta": {Enabled: false}}
		c := mustResolve(t, s, Retain)
		if _, ok := patch(ctx, s, c, []string{p}); ok {
			t.Errorf("patched a catalog with [prompts.NAME] blocks")
		}
	})
	t.Run("overlapping roots", func(t *testing.T) {
		root := t.TempDir()
		p := writePrompt(t, root, "a.md", "alpha", "First.")
		writePrompt(t, root, "sub/b.md", "beta", "Second.")
		s := mdSettings(root)
		s.Roots = append(s.Roots, filepath.Join(root, "sub"))
		c := mustResolve(t, s, Retain)
		if _, ok := patch(ctx, s, c, []string{p}); ok {
			t.Errorf("patched a catalog whose roots overlap")
		}
	})
	t.Run("a duplicate name", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "alpha", "First.")
		c := mustResolve(t, mdSettings(root), Retain)
		p := writePrompt(t, root, "b.md", "alpha", "First, again.")
		if _, ok := patch(ctx, mdSettings(root), c, []string{p}); ok {
			t.Errorf("patched in a second prompt named alpha")
		}
	})
	t.Run("changed settings", func(t *testing.T) {
		root := t.TempDir()
		p := writePrompt(t, root, "a.md", "alpha", "First.")
		c := mustResolve(t, mdSettings(root), Retain)
		s := mdSettings(root)
		s.Exclude = []string{"a.md"}
		if _, ok := patch(ctx, s, c, []string{p}); ok {
			t.Errorf("patched under other settings")
		}
	})
	t.Run("the root removed", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "prompts")
		writePrompt(t, root, "a.md", "alpha", "First.")
		c := mustResolve(t, mdSettings(root), Retain)
		if _, ok := patch(ctx, mdSettings(root), c, []string{root}); ok {
			t.Errorf("patched a removed root")
		}
	})
	t.Run("a link created", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "alpha", "First.")
		c := mustResolve(t, mdSettings(root), Retain)
		link := filepath.Join(root, "b.md")
		if err := os.Symlink(filepath.Join(root, "a.md"), link); err != nil {
			t.Skip("no symlinks here:", err)
		}
		if _, ok := patch(ctx, mdSettings(root), c, []string{link}); ok {
			t.Errorf("patched past a new symbolic link")
		}
	})
	t.Run("nothing left", func(t *testing.T) {
		root := t.TempDir()
		p := writePrompt(t, root, "a.md", "alpha", "First.")
		c := mustResolve(t, mdSettings(root), Retain)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if _, ok := patch(ctx, mdSettings(root), c, []string{p}); ok {
			t.Errorf("patched to an empty catalog")
		}
	})
}

// TestWatcherPatchesAfterTheFirstReload drives the real fsnotify wiring:
// the first reload after the watch starts resolves in full (a save
// between the boot resolution and the watch has no event), the next ones
// patch what the events named, and agree with a full resolution.
func TestWatcherPatchesAfterTheFirstReload(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "prompts")
	config := writeFile(t, base, "prompts.toml", "")
	writePrompt(t, root, "a.md", "alpha", "First.")
	s := mdSettings(root)
	h := newHandle(t, s, Options{})
	lw := startLiveWatch(t, h, config, s, nil)
	var first *ReloadOutcome
	settled := func(want string) ReloadOutcome {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case out := <-lw.reloads:
				if first == nil {
					first = &out
				}
				if _, ok := h.Current().Catalog().Healthy(want); ok {
					return out
				}
			case <-timeout:
				t.Fatalf("no reload brought in %q; live: %v", want, entryNames(h.Current().Catalog()))
			}
		}
	}
	writePrompt(t, root, "b.md", "beta", "Second.")
	settled("beta")
	if first.patched {
		t.Errorf("the first reload after the watch began was patched")
	}
	// An editor's atomic save, and a directory with a prompt in it.
	tmp := writePrompt(t, root, ".b.md.tmp", "beta_saved", "Second, saved.")
	if err := os.Rename(tmp, filepath.Join(root, "b.md")); err != nil {
		t.Fatal(err)
	}
	if out := settled("beta_saved"); !out.patched {
		t.Errorf("a reload after an atomic save resolved in full")
	}
	writePrompt(t, root, "sub/c.md", "gamma", "Third.")
	if out := settled("gamma"); !out.patched {
		t.Errorf("a reload after a new directory resolved in full")
	}
	// A directory moved within the root, then a save inside it.
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	settled("gamma")
	writePrompt(t, root, "moved/c.md", "gamma_edited", "Third, edited after the move.")
	settled("gamma_edited")
	sameCatalog(t, "after the watched edits", h.Current().Catalog(), mustResolve(t, s, Retain))
}

// TestPatchedReloadMatchesFullResolveRandomly runs long fixed-seed series
// of random edits (names that collide, sort anywhere, break, shadow and
// publish tools; files and directories coming and going) and compares
// each patched reload with a full resolution of the same tree.
func TestPatchedReloadMatchesFullResolveRandomly(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 12))
			root := t.TempDir()
			s := Settings{Roots: []string{root}, Include: []string{"**/*.md"}, Exclude: []string{"skip/**"}, Tools: []string{"t*"}}
			dirs := []string{"", "a", "a/b", "c", "skip"}
			stems := []string{"ab", "Ab", "t1", "zz", "mm", "list-prompts", "n_1"}
			// Names that collide now and then with each other and with
			// the stems, among many that do not.
			names := []string{"ab", "t1", "zz", "mm", "n_1", "t2", "aa"}
			for i := range 40 {
				names = append(names, fmt.Sprintf("p%02d", i), fmt.Sprintf("t_%02d", i))
			}
			var paths []string
			// file picks a file and notes the directories its write will
			// create, as the watcher's events would name them.
			file := func() string {
				p := filepath.Join(root, filepath.FromSlash(dirs[rng.IntN(len(dirs))]), stems[rng.IntN(len(stems))]+".md")
				for d := filepath.Dir(p); d != root; d = filepath.Dir(d) {
					if _, err := os.Stat(d); err != nil {
						paths = append(paths, d)
					}
				}
				return p
			}
			writePrompt(t, root, "seed.md", "seed", "Keeps the catalog from being empty.")
			h := newHandle(t, s, Options{})
			patched := 0
			for step := range 150 {
				// As the watcher does, a reload that failed hands its
				// paths on to the next one.
				since := h.Current().Catalog()
				switch op := rng.IntN(10); {
				case op < 4:
					p := file()
					writeFile(t, root, mustRel(t, root, p), promptText(names[rng.IntN(len(names))], fmt.Sprintf("Step %d.", rng.IntN(3))))
					paths = append(paths, p)
				case op < 6:
					p := file()
					writeFile(t, root, mustRel(t, root, p), "---\nname: x\npromptforge: 1\n---\nno heading\n")
					paths = append(paths, p)
				case op < 8:
					p := file()
					os.Remove(p)
					paths = append(paths, p)
					os.Remove(filepath.Dir(p)) // and its directory, if that empties it
				case op < 9:
					dir := filepath.Join(root, filepath.FromSlash(dirs[1+rng.IntN(len(dirs)-1)]))
					os.RemoveAll(dir)
					paths = append(paths, dir)
				default:
					p := file()
					writeFile(t, root, mustRel(t, root, p), "# just markdown\n")
					paths = append(paths, p)
				}
				out, err := h.reload(context.Background(), fixed(s), &changeSet{since: since, paths: paths})
				want, wantErr := Resolve(context.Background(), s, Retain)
				name := fmt.Sprintf("step %d (%v)", step, paths)
				if wantErr != nil {
					if err == nil {
						t.Fatalf("%s: reloaded, but a full resolution fails: %v", name, wantErr)
					}
					continue
				}
				paths = paths[:0]
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				sameCatalog(t, name, h.Current().Catalog(), want)
				if out.patched {
					patched++
					sharesTheRest(t, name, since, h.Current().Catalog())
				}
			}
			if patched < 50 {
				t.Errorf("only %d of 150 reloads were patched", patched)
			}
		})
	}
}

func mustRel(t *testing.T, root, p string) string {
	t.Helper()
	rel, err := filepath.Rel(root, p)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// A root reached through a link is patched whichever spelling an event
// names a file in, and one file named in both is evaluated once.
func TestPatchTakesEitherSpellingOfARoot(t *testing.T) {
	real := t.TempDir()
	root := filepath.Join(t.TempDir(), "prompts")
	if err := os.Symlink(real, root); err != nil {
		t.Skip("no symlinks here:", err)
	}
	writePrompt(t, real, "a.md", "alpha", "First.")
	writePrompt(t, real, "b.md", "beta", "Second.")
	s := mdSettings(root)
	c := mustResolve(t, s, Retain)
	canon, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	writePrompt(t, real, "a.md", "alpha", "First, edited.")
	writePrompt(t, real, "c.md", "gamma", "Third.")
	got, ok := patch(context.Background(), s, c, []string{
		filepath.Join(root, "a.md"), filepath.Join(canon, "a.md"), filepath.Join(canon, "c.md"),
	})
	if !ok {
		t.Fatal("not patched")
	}
	sameCatalog(t, "two spellings", got, mustResolve(t, s, Retain))
}

// TestWatcherGivesUpPastMaxChanged: past maxChanged remembered paths the
// watcher forgets them and marks the next reload for a full resolution,
// and a failed reload's paths put back count toward the same bound.
func TestWatcherGivesUpPastMaxChanged(t *testing.T) {
	w := &Watcher{changed: make(map[string]struct{})}
	for i := range maxChanged {
		w.remember(fmt.Sprintf("/p/%d.md", i))
	}
	if w.lost || len(w.changed) != maxChanged {
		t.Fatalf("at maxChanged: lost %v, %d paths; want kept", w.lost, len(w.changed))
	}
	w.remember("/p/one-more.md")
	if !w.lost || len(w.changed) != 0 {
		t.Fatalf("past maxChanged: lost %v, %d paths; want lost and none kept", w.lost, len(w.changed))
	}
	w.lost = false
	back := make([]string, maxChanged+1)
	for i := range back {
		back[i] = fmt.Sprintf("/q/%d.md", i)
	}
	w.remember(back...)
	if !w.lost || len(w.changed) != 0 {
		t.Fatalf("paths put back past maxChanged: lost %v, %d paths", w.lost, len(w.changed))
	}
}
