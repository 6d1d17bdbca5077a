package catalog

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// twoRoots makes a team's shared directory and a personal one.
func twoRoots(t *testing.T) (shared, mine string) {
	t.Helper()
	base := t.TempDir()
	return filepath.Join(base, "shared"), filepath.Join(base, "mine")
}

func rootsSettings(roots ...string) Settings {
	return Settings{Roots: roots, Include: []string{"**/*.md"}, Exclude: []string{"drafts/**"}}
}

func TestResolveAcrossRoots(t *testing.T) {
	shared, mine := twoRoots(t)
	writePrompt(t, shared, "review.md", "review", "Team review.")
	writePrompt(t, shared, "drafts/wip.md", "wip", "Excluded in every root.")
	writePrompt(t, mine, "notes/summarize.md", "summarize", "Mine.")
	writePrompt(t, mine, "drafts/other.md", "other", "Excluded in every root.")

	c := mustResolve(t, rootsSettings(shared, mine), Reject)
	if got := entryNames(c); !slices.Equal(got, []string{"review", "summarize"}) {
		t.Fatalf("names = %v", got)
	}
	if p := entryNamed(t, c, "summarize").Path(); p != filepath.Join(mine, "notes", "summarize.md") {
		t.Errorf("summarize path = %q", p)
	}
}

func TestDuplicateAcrossRootsNamesBothFiles(t *testing.T) {
	shared, mine := twoRoots(t)
	// The same relative path in both directories: only the root tells
	// the two files apart, so the fault must name it.
	a := writePrompt(t, shared, "review.md", "review", "Team review.")
	b := writePrompt(t, mine, "review.md", "review", "My review.")
	writePrompt(t, mine, "other.md", "other", "Fine.")
	for _, mode := range []Mode{Reject, Retain} {
		ce := mustFail(t, rootsSettings(shared, mine), mode)
		if len(ce.Faults) != 1 || ce.Faults[0].Kind != KindDuplicate || ce.Faults[0].Prompt != "review" {
			t.Fatalf("faults = %v", ce.Faults)
		}
		if want := "declared by 2 prompts: " + a + ", " + b; ce.Faults[0].Detail != want {
			t.Errorf("detail = %q, want %q", ce.Faults[0].Detail, want)
		}
	}
}

func TestOverlappingRootsReadAFileOnce(t *testing.T) {
	shared, _ := twoRoots(t)
	writePrompt(t, shared, "team/review.md", "review", "Team review.")
	// The inner directory is also listed: its files are found twice, but
	// one file is one prompt, not a conflict with itself.
	c := mustResolve(t, rootsSettings(shared, filepath.Join(shared, "team")), Reject)
	if got := entryNames(c); !slices.Equal(got, []string{"review"}) {
		t.Fatalf("names = %v", got)
	}
}

func TestBlockFileAcrossRoots(t *testing.T) {
	shared, mine := twoRoots(t)
	writePrompt(t, shared, "review.md", "review", "Team review.")
	writePrompt(t, mine, "people/person.md", "person", "Only mine has it.")
	block := func(file string) Settings {
		return Settings{Roots: []string{shared, mine}, Include: []string{"review.md"}, Blocks: map[string]Block{"person": {Enabled: true, File: file}}}
	}

	t.Run("found under exactly one root", func(t *testing.T) {
		c := mustResolve(t, block("people/person.md"), Reject)
		if p := entryNamed(t, c, "person").Path(); p != filepath.Join(mine, "people", "person.md") {
			t.Errorf("path = %q", p)
		}
	})
	t.Run("under none", func(t *testing.T) {
		c := mustResolve(t, block("people/nobody.md"), Retain)
		e := entryNamed(t, c, "person")
		if !e.Broken() || !containsAll(e.Problem(), "people/nobody.md is in none of the prompts directories: looked in", shared, mine) {
			t.Errorf("entry = %v %q", e.Broken(), e.Problem())
		}
	})
	t.Run("under two is a conflict naming both", func(t *testing.T) {
		writePrompt(t, shared, "people/person.md", "person", "The team's too.")
		for _, mode := range []Mode{Reject, Retain} {
			ce := mustFail(t, block("people/person.md"), mode)
			if len(ce.Faults) != 1 || ce.Faults[0].Kind != KindDuplicate || ce.Faults[0].Prompt != "person" ||
				!containsAll(ce.Faults[0].Detail, `[prompts.person].file "people/person.md" is in 2 prompts directories: `+
					filepath.Join(shared, "people", "person.md")+", "+filepath.Join(mine, "people", "person.md")) {
				t.Errorf("faults = %v", ce.Faults)
			}
		}
	})
}

func TestMissingRootAmongSeveral(t *testing.T) {
	shared, mine := twoRoots(t)
	writePrompt(t, mine, "a.md", "alpha", "Mine.")
	ce := mustFail(t, rootsSettings(shared, mine), Retain)
	if len(ce.Faults) != 1 || ce.Faults[0].Kind != KindPattern ||
		!containsAll(ce.Faults[0].Detail, `the prompts directory "`+shared+`" does not exist`,
			"read from the config file's directory", "remove it from [paths].prompts") {
		t.Fatalf("faults = %v", ce.Faults)
	}
	// Both missing: nothing resolves, and the Empty fault names each.
	ce = mustFail(t, rootsSettings(shared, filepath.Join(mine, "nope")), Retain)
	if len(ce.Faults) != 1 || ce.Faults[0].Kind != KindEmpty ||
		strings.Count(ce.Faults[0].Detail, "does not exist (relative paths in [paths].prompts are read from the config file's directory)") != 2 {
		t.Fatalf("faults = %v", ce.Faults)
	}
}

// TestWatcherReloadsOnSaveInSecondRoot: every root is watched, not only
// the first.
func TestWatcherReloadsOnSaveInSecondRoot(t *testing.T) {
	base := t.TempDir()
	shared, mine := filepath.Join(base, "shared"), filepath.Join(base, "mine")
	config := writeFile(t, base, "prompts.toml", "")
	writePrompt(t, shared, "a.md", "alpha", "First.")
	writePrompt(t, mine, "b.md", "beta", "Second.")
	s := rootsSettings(shared, mine)
	logs := &logBuffer{}
	h := newHandle(t, s, Options{})

	lw := startLiveWatch(t, h, config, s, logs.logger())
	if !strings.Contains(logs.String(), `prompts="`+shared+", "+mine+`"`) {
		t.Errorf("start line does not name both roots:\n%s", logs)
	}
	writePrompt(t, mine, "c.md", "gamma", "Third.")
	lw.waitFor(t, "gamma")

	// Re-registering after a watch error watches both roots again.
	lw.w.broken.Store(true)
	lw.w.poke()
	select {
	case <-lw.reloads:
	case <-time.After(10 * time.Second):
		t.Fatal("no settle after the watch error")
	}
	for _, root := range []string{shared, mine} {
		if !slices.Contains(lw.w.fsw.WatchList(), root) {
			t.Errorf("%s not watched after re-registering: %v", root, lw.w.fsw.WatchList())
		}
	}
	writePrompt(t, mine, "d.md", "delta", "Fourth.")
	lw.waitFor(t, "delta")
}
