package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestIncludeDepth(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "top.md", "top", "Top level.")
	writePrompt(t, root, "governance/a.md", "gov_a", "Nested once.")
	writePrompt(t, root, "governance/deep/b.md", "gov_b", "Nested twice.")
	writePrompt(t, root, "other/c.md", "other_c", "Elsewhere.")

	tests := []struct {
		include string
		want    []string
	}{
		{"*.md", []string{"top"}},
		{"governance/**/*.md", []string{"gov_a", "gov_b"}},
		{"**/*.md", []string{"gov_a", "gov_b", "other_c", "top"}},
		{"*/*.md", []string{"gov_a", "other_c"}},
	}
	for _, tt := range tests {
		t.Run(tt.include, func(t *testing.T) {
			c := mustResolve(t, Settings{Roots: []string{root}, Include: []string{tt.include}}, Reject)
			if got := entryNames(c); !slices.Equal(got, tt.want) {
				t.Errorf("names = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDotfilesAreMatched(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, ".hidden.md", "hidden", "A dotfile.")
	writePrompt(t, root, ".dir/inner.md", "inner", "Inside a dot-directory.")
	c := mustResolve(t, mdSettings(root), Reject)
	if got, want := entryNames(c), []string{"hidden", "inner"}; !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}
}

func TestExcludeBeatsInclude(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "keep.md", "keep", "Kept.")
	writePrompt(t, root, "_draft.md", "draft", "Underscored at the root.")
	writePrompt(t, root, "drafts/wip.md", "wip", "In drafts.")
	writePrompt(t, root, "sub/_nested.md", "nested", "Underscored below the root.")

	s := mdSettings(root)
	s.Exclude = []string{"_*.md", "drafts/**"}
	c := mustResolve(t, s, Reject)
	// "_*.md" is relative to the root, so it only reaches root-level files.
	if got, want := entryNames(c), []string{"keep", "nested"}; !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}

	s.Exclude = []string{"**/_*.md", "drafts/**"}
	c = mustResolve(t, s, Reject)
	if got, want := entryNames(c), []string{"keep"}; !slices.Equal(got, want) {
		t.Errorf("with **/_*.md: names = %v, want %v", got, want)
	}
}

func TestMarkdownWithoutVersionIsSkipped(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "real.md", "real", "A prompt.")
	writeFile(t, root, "README.md", "# Notes\n\nNot a prompt.\n")
	writeFile(t, root, "notes.md", "---\ntitle: notes\n---\n# Notes\n")
	writeFile(t, root, "yaml-broken.md", "---\ntitle: [unclosed\n---\n# Notes\n")
	c := mustResolve(t, mdSettings(root), Reject)
	if got, want := entryNames(c), []string{"real"}; !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}
}

func TestMalformedCandidate(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "good.md", "good", "Fine.")
	writeFile(t, root, "mangled.md", "\uFEFF---\nname: mangled\n  promptforge: [1\n---\n# M\n")

	c := mustResolve(t, mdSettings(root), Retain)
	e := entryNamed(t, c, "mangled")
	if !e.Broken() || e.Kind() != KindUnparsable || e.Problem() != "declares a promptforge frontmatter that does not parse" {
		t.Errorf("mangled = broken %v kind %v problem %q", e.Broken(), e.Kind(), e.Problem())
	}

	ce := mustFail(t, mdSettings(root), Reject)
	if len(ce.Faults) != 1 || ce.Faults[0].Prompt != "mangled" || ce.Faults[0].Kind != KindUnparsable {
		t.Errorf("faults = %v", ce.Faults)
	}
}

func TestMalformedCandidateRule(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{"---\npromptforge: x: y\n---\n", true},
		{"  ---  \nname: a\n\tpromptforge_v: 1\n", true}, // no closing line: up to EOF
		{"---\nname: a\n---\npromptforge: 1\n", false},   // after the frontmatter
		{"# title\n---\npromptforge: 1\n", false},        // does not open with ---
		{"", false},
	}
	for _, tt := range tests {
		if got := malformedCandidate(tt.src); got != tt.want {
			t.Errorf("malformedCandidate(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestDuplicateNames(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "one.md", "same", "First.")
	writePrompt(t, root, "two.md", "same", "Second.")
	for _, mode := range []Mode{Reject, Retain} {
		ce := mustFail(t, mdSettings(root), mode)
		if len(ce.Faults) != 1 {
			t.Fatalf("mode %v: faults = %v, want exactly one", mode, ce.Faults)
		}
		f := ce.Faults[0]
		want := "declared by 2 prompts: " + filepath.Join(root, "one.md") + ", " + filepath.Join(root, "two.md")
		if f.Kind != KindDuplicate || f.Prompt != "same" || f.Path != "" || f.Detail != want {
			t.Errorf("mode %v: fault = %+v, want detail %q", mode, f, want)
		}
	}
}

func TestBrokenPlaceholdersNeverShadowHealthyNames(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "good.md", "good", "Healthy good.")
	writePrompt(t, root, "research-person.md", "research_person", "Healthy researcher.")
	writeFile(t, root, "Research-Person.md", "---\nname: research_person\npromptforge: 1\n---\n# no description\n")
	writeFile(t, root, "sub/good.md", "---\nname: good\ndescription: x\npromptforge: 1\n---\nno heading\n")

	c := mustResolve(t, mdSettings(root), Retain)
	if c.Len() != 4 {
		t.Fatalf("entries = %v, want 4", entryNames(c))
	}
	want := []string{"good", "good (broken)", "research_person", "Research-Person (broken)"}
	got := entryNames(c)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}
	for _, asked := range []string{"good", "GOOD", "research_person", "Research-Person"} {
		e, err := c.Lookup(asked)
		if err != nil || e.Broken() {
			t.Errorf("Lookup(%q) = %q broken=%v, %v; want the healthy prompt", asked, e.Name(), !e.IsZero() && e.Broken(), err)
		}
	}
	if e, err := c.Lookup("good (broken)"); err != nil || !e.Broken() {
		t.Errorf("Lookup of the broken placeholder = %v, %v; want the broken entry", e, err)
	}

	ce := mustFail(t, mdSettings(root), Reject)
	if len(ce.Faults) != 2 {
		t.Fatalf("Reject faults = %v, want 2", ce.Faults)
	}
	for _, f := range ce.Faults {
		if f.Kind == KindDuplicate {
			t.Errorf("unexpected duplicate fault %v", f)
		}
	}
}

func TestEmptyCatalog(t *testing.T) {
	for name, root := range map[string]string{
		"empty dir":    t.TempDir(),
		"missing root": filepath.Join(t.TempDir(), "nope"),
	} {
		t.Run(name, func(t *testing.T) {
			for _, mode := range []Mode{Reject, Retain} {
				ce := mustFail(t, mdSettings(root), mode)
				if len(ce.Faults) != 1 || ce.Faults[0].Kind != KindEmpty ||
					!strings.Contains(ce.Faults[0].Detail, "no prompts resolved") {
					t.Errorf("faults = %v", ce.Faults)
				}
				if ce.Class() != ClassConfiguration {
					t.Errorf("class = %v, want Configuration", ce.Class())
				}
				// Only a missing directory is named as the cause.
				if named := strings.Contains(ce.Faults[0].Detail, "does not exist"); named != (name == "missing root") {
					t.Errorf("detail = %q", ce.Faults[0].Detail)
				}
			}
		})
	}
}

func TestInvalidNameFault(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "bad.md", "Research-Person", "Illegal name.")
	ce := mustFail(t, mdSettings(root), Reject)
	if len(ce.Faults) != 1 {
		t.Fatalf("faults = %v", ce.Faults)
	}
	f := ce.Faults[0]
	if f.Kind != KindInvalidName || f.Prompt != "bad" || !strings.HasSuffix(f.Path, "bad.md") ||
		f.Detail != `tool name "Research-Person" is not ^[a-z][a-z0-9_]{0,47}$` {
		t.Errorf("fault = %+v", f)
	}
	if !strings.Contains(ce.Error(), "Research-Person") || !strings.Contains(ce.Error(), "bad.md") {
		t.Errorf("error text %q does not name the name and the file", ce.Error())
	}
}

func TestCatalogRefusalNamesFileAndName(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "upper.md", "Shouty", "Upper case name.")
	_, err := Resolve(context.Background(), mdSettings(root), Reject)
	if err == nil || !containsAll(err.Error(), "catalog has 1 fault\n  upper (", "upper.md", "Shouty") {
		t.Errorf("err = %v", err)
	}
}

func TestReservedNamesAreFaults(t *testing.T) {
	root := t.TempDir()
	builtins := []string{"list_prompts", "run_prompt", "check_run", "need_prompt"}
	for i, b := range builtins {
		writePrompt(t, root, string(rune('a'+i))+".md", b, "Named like a built-in.")
	}
	ce := mustFail(t, mdSettings(root), Reject)
	if len(ce.Faults) != 4 {
		t.Fatalf("faults = %v, want 4", ce.Faults)
	}
	for i, b := range builtins {
		f := ce.Faults[i]
		file := string(rune('a'+i)) + ".md"
		want := `prompt name "` + b + `" is reserved: a built-in already answers to it, so "run ` + b + `" is ambiguous`
		if f.Kind != KindInvalidName || !strings.HasSuffix(f.Path, file) || f.Detail != want {
			t.Errorf("fault %d = %+v, want %s for %s", i, f, want, file)
		}
	}
}

func TestReservedNameUnderRetain(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "good.md", "good", "Fine.")
	writePrompt(t, root, "lister.md", "list_prompts", "Named like a built-in.")
	c := mustResolve(t, mdSettings(root), Retain)
	if e := entryNamed(t, c, "good"); e.Broken() {
		t.Errorf("good is broken: %s", e.Problem())
	}
	for _, e := range c.All() {
		if e.Name() == "list_prompts" {
			t.Errorf("an entry is named list_prompts")
		}
	}
	if e := entryNamed(t, c, "lister"); !e.Broken() || !strings.Contains(e.Problem(), "reserved") {
		t.Errorf("lister = broken %v, problem %q", e.Broken(), e.Problem())
	}
}

func TestPlaceholderGuard(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "good.md", "good", "Fine.")
	writeFile(t, root, "list_prompts.md", "---\nname: x\npromptforge: 1\n---\n")
	writePrompt(t, root, "run_prompt.md", "Bad-Name", "Illegal.")
	c := mustResolve(t, mdSettings(root), Retain)
	for _, want := range []string{"list_prompts (broken)", "run_prompt (broken)"} {
		if e := entryNamed(t, c, want); !e.Broken() {
			t.Errorf("%s is not broken", want)
		}
	}
}

func TestUnparsableAndIllegalNameBothReported(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "broken.md", "---\nname: broken\npromptforge: 1\n---\n# Title\n# Second title\n")
	writePrompt(t, root, "shouty.md", "Shouty", "Illegal name.")
	ce := mustFail(t, mdSettings(root), Reject)
	if len(ce.Faults) != 2 {
		t.Fatalf("faults = %v, want 2", ce.Faults)
	}
	for i, file := range []string{"broken.md", "shouty.md"} {
		f := ce.Faults[i]
		if f.Prompt == "" || !strings.HasSuffix(f.Path, file) {
			t.Errorf("fault %d = %+v, want prompt and path %s", i, f, file)
		}
	}
	if ce.Faults[0].Kind != KindUnparsable || ce.Faults[1].Kind != KindInvalidName {
		t.Errorf("kinds = %v, %v", ce.Faults[0].Kind, ce.Faults[1].Kind)
	}
	if ce.Class() != ClassBroken {
		t.Errorf("class = %v, want Broken", ce.Class())
	}
}

func TestUnparsableRejectedAtBootRetainedOnReload(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "good.md", "good", "Fine.")
	writeFile(t, root, "bad.md", "---\nname: bad\ndescription: no title\npromptforge: 1\n---\nno heading here\n")

	mustFail(t, mdSettings(root), Reject)
	c := mustResolve(t, mdSettings(root), Retain)
	if c.Len() != 2 {
		t.Fatalf("entries = %v", entryNames(c))
	}
	e := entryNamed(t, c, "bad")
	if !e.Broken() || !strings.HasPrefix(e.Problem(), "does not parse: ") || e.Description() != "" || e.Source() != "" || e.Prompt() != nil {
		t.Errorf("bad = %+v", *e.e)
	}
	if c.BrokenCount() != 1 {
		t.Errorf("BrokenCount = %d", c.BrokenCount())
	}
}

func TestUnsupportedVersionIsBroken(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "good.md", "good", "Fine.")
	writeFile(t, root, "future.md", strings.Replace(promptText("future", "From the future."), "promptforge: 1", "promptforge: 2", 1))
	c := mustResolve(t, mdSettings(root), Retain)
	e := entryNamed(t, c, "future")
	if !e.Broken() || e.Problem() != "unsupported promptforge version: 2 (this build supports major 1)" {
		t.Errorf("future = broken %v problem %q", e.Broken(), e.Problem())
	}
}

func TestSizeCap(t *testing.T) {
	root := t.TempDir()
	base := promptText("exact", "Exactly at the cap.")
	pad := MaxPromptBytes - len(base)
	// Prose padding after the Lua block keeps the prompt valid.
	exact := base + "\n" + strings.Repeat("x", pad-1)
	if len(exact) != MaxPromptBytes {
		t.Fatalf("fixture is %d bytes", len(exact))
	}
	writeFile(t, root, "exact.md", exact)
	writeFile(t, root, "over.md", strings.Replace(exact, "name: exact", "name: overx", 1)+"y")

	c := mustResolve(t, mdSettings(root), Retain)
	if e := entryNamed(t, c, "exact"); e.Broken() {
		t.Errorf("a file of exactly the cap is broken: %s", e.Problem())
	}
	e := entryNamed(t, c, "over")
	want := "is 2097153 bytes, over the 2097152-byte prompt limit"
	if !e.Broken() || e.Kind() != KindUnreadable || e.Problem() != want {
		t.Errorf("over = kind %v problem %q, want %q", e.Kind(), e.Problem(), want)
	}
}

func TestFileGrowingPastCapDuringRead(t *testing.T) {
	t.Skip("needs a file that grows between stat and read; there is no portable way to " +
		"stage that race without a fault-injecting filesystem. readFile reads at most cap+1 " +
		"bytes and reports \"is over the 2097152-byte prompt limit\" when it gets them.")
}

func TestInvalidUTF8IsUnreadable(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "good.md", "good", "Fine.")
	writeFile(t, root, "latin1.md", promptText("latin", "caf\xe9"))
	c := mustResolve(t, mdSettings(root), Retain)
	e := entryNamed(t, c, "latin1")
	if e.Kind() != KindUnreadable || !strings.HasPrefix(e.Problem(), "unreadable: ") {
		t.Errorf("latin1 = kind %v problem %q", e.Kind(), e.Problem())
	}
}

func TestSymlinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "prompts")
	outside := filepath.Join(base, "outside")
	writePrompt(t, root, "good.md", "good", "Fine.")
	writePrompt(t, outside, "evil.md", "evil", "Outside the root.")
	writePrompt(t, outside, "dir/evil2.md", "evil_two", "Outside the root.")
	writePrompt(t, root, "real/inner.md", "inner", "Inside.")
	links := map[string]string{
		filepath.Join(root, "escape.md"):   filepath.Join(outside, "evil.md"),
		filepath.Join(root, "escapedir"):   filepath.Join(outside, "dir"),
		filepath.Join(root, "real/loop"):   root,                                  // a loop back to the root
		filepath.Join(root, "alias"):       filepath.Join(root, "real"),           // a directory inside the root
		filepath.Join(root, "dangling.md"): filepath.Join(root, "does-not-exist"), // nowhere
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	s := mdSettings(root)
	s.Exclude = []string{"alias/**"}
	c := mustResolve(t, s, Reject)
	if got, want := entryNames(c), []string{"good", "inner"}; !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v (escapes dropped, loop walked once)", got, want)
	}
	// Followed, a link to a directory inside the root reaches the same
	// prompt a second time, exactly as the reference's glob would.
	ce := mustFail(t, mdSettings(root), Reject)
	if len(ce.Faults) != 1 || ce.Faults[0].Kind != KindDuplicate || ce.Faults[0].Prompt != "inner" {
		t.Errorf("faults = %v, want the inner prompt reached twice", ce.Faults)
	}
}

func TestRootMetacharactersAreLiteral(t *testing.T) {
	root := filepath.Join(t.TempDir(), "p[1]*?")
	writePrompt(t, root, "a.md", "a", "In a root with glob characters.")
	c := mustResolve(t, mdSettings(root), Reject)
	if got := entryNames(c); !slices.Equal(got, []string{"a"}) {
		t.Errorf("names = %v", got)
	}
}

func TestPatternDialect(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "a", "A.")
	writePrompt(t, root, "{a,b}.md", "braces", "Braces in the name.")
	writePrompt(t, root, `back\slash.md`, "backslash", "A backslash in the name.")
	writePrompt(t, root, "^x.md", "caret", "A caret.")
	writePrompt(t, root, "y.md", "y", "Y.")
	tests := []struct {
		include string
		want    []string
	}{
		{"{a,b}.md", []string{"braces"}},
		{`back\slash.md`, []string{"backslash"}},
		{"[^]x.md", []string{"caret"}},
		{"[!a^{b]*.md", []string{"y"}},
		{"?.md", []string{"a", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.include, func(t *testing.T) {
			c := mustResolve(t, Settings{Roots: []string{root}, Include: []string{tt.include}}, Reject)
			if got := entryNames(c); !slices.Equal(got, tt.want) {
				t.Errorf("names = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBadPatternIsPatternFault(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "prompts")
	writePrompt(t, root, "a.md", "a", "A.")
	writePrompt(t, base, "outside.md", "outside", "Outside.")
	tests := []struct {
		pattern, want string
	}{
		{"a[b", `include "a[b": is not a valid glob`},
		{"../*.md", "include \"../*.md\": must not climb above the prompts directory with `..`"},
		{"x/../../*.md", "include \"x/../../*.md\": must not climb above the prompts directory with `..`"},
		{"/etc/*.md", `include "/etc/*.md": must be relative to the prompts directory`},
	}
	for _, tt := range tests {
		s := mdSettings(root)
		s.Include = append(s.Include, tt.pattern)
		ce := mustFail(t, s, Retain)
		if len(ce.Faults) != 1 || ce.Faults[0].Kind != KindPattern || ce.Faults[0].Detail != tt.want {
			t.Errorf("%s: faults = %v, want %s", tt.pattern, ce.Faults, tt.want)
		}
	}
}

func TestUnreadableDirectoryIsPatternFault(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any directory, so permissions cannot make one unreadable")
	}
	root := t.TempDir()
	writePrompt(t, root, "a.md", "a", "A.")
	locked := filepath.Join(root, "locked")
	writePrompt(t, root, "locked/b.md", "b", "B.")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	ce := mustFail(t, mdSettings(root), Retain)
	if len(ce.Faults) != 1 || ce.Faults[0].Kind != KindPattern || !strings.HasPrefix(ce.Faults[0].Detail, `include "**/*.md": `) {
		t.Errorf("faults = %v", ce.Faults)
	}
}

func TestEntriesOrderedByName(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "zulu", "Z.")
	writePrompt(t, root, "m.md", "mike", "M.")
	writePrompt(t, root, "z.md", "alpha", "A.")
	writeFile(t, root, "b.md", "---\nname: mike\npromptforge: 1\n---\n") // broken, stem "b"
	writeFile(t, root, "mike.md", "---\nname: x\npromptforge: 1\n---\n") // broken, stem collides
	c := mustResolve(t, mdSettings(root), Retain)
	want := []string{"alpha", "b", "mike", "mike (broken)", "zulu"}
	if got := entryNames(c); !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}
}

func TestSourceKeptExactly(t *testing.T) {
	root := t.TempDir()
	src := "\uFEFF" + strings.ReplaceAll(promptText("crlf", "Windows line ends."), "\n", "\r\n")
	writeFile(t, root, "crlf.md", src)
	c := mustResolve(t, mdSettings(root), Reject)
	e := entryNamed(t, c, "crlf")
	if e.Source() != src {
		t.Errorf("source was altered")
	}
	if e.Prompt() == nil || e.Description() != "Windows line ends." {
		t.Errorf("entry = %+v", *e.e)
	}
}

func TestBlocks(t *testing.T) {
	t.Run("disabled drops a globbed prompt", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "a", "A.")
		writePrompt(t, root, "b.md", "b", "B.")
		writeFile(t, root, "broken.md", "---\nname: x\npromptforge: 1\n---\n")
		s := mdSettings(root)
		s.Blocks = map[string]Block{"b": {Enabled: false}, "broken": {Enabled: false}}
		c := mustResolve(t, s, Retain)
		if got := entryNames(c); !slices.Equal(got, []string{"a"}) {
			t.Errorf("names = %v, want [a]", got)
		}
	})
	t.Run("file outside the globs", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "top.md", "top", "Top.")
		writePrompt(t, root, "experiments/staker.md", "staker", "Stakeholder position report.")
		s := Settings{Roots: []string{root}, Include: []string{"*.md"},
			Blocks: map[string]Block{"staker": {Enabled: true, File: "experiments/staker.md"}}}
		c := mustResolve(t, s, Reject)
		if e := entryNamed(t, c, "staker"); e.Description() != "Stakeholder position report." {
			t.Errorf("description = %q", e.Description())
		}
	})
	t.Run("replaces the globbed entry for the same file", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "top.md", "top", "Top.")
		s := mdSettings(root)
		s.Blocks = map[string]Block{"top": {Enabled: true, File: "./top.md"}}
		c := mustResolve(t, s, Reject)
		if c.Len() != 1 {
			t.Errorf("entries = %v, want 1", entryNames(c))
		}
	})
	t.Run("name mismatch", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "x/other.md", "other_name", "Other.")
		s := Settings{Roots: []string{root}, Blocks: map[string]Block{"mine": {Enabled: true, File: "x/other.md"}}}
		ce := mustFail(t, s, Reject)
		if len(ce.Faults) != 1 {
			t.Fatalf("faults = %v", ce.Faults)
		}
		f := ce.Faults[0]
		if f.Kind != KindInvalidName || f.Prompt != "mine" ||
			f.Detail != `frontmatter name "other_name" does not match its [prompts.mine] block` {
			t.Errorf("fault = %+v", f)
		}
	})
	t.Run("stale override", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "a", "A.")
		for _, enabled := range []bool{true, false} {
			s := mdSettings(root)
			s.Blocks = map[string]Block{"ghost": {Enabled: enabled}}
			for _, mode := range []Mode{Reject, Retain} {
				ce := mustFail(t, s, mode)
				if len(ce.Faults) != 1 {
					t.Fatalf("faults = %v", ce.Faults)
				}
				f := ce.Faults[0]
				if f.Kind != KindStaleOverride || f.Prompt != "ghost" || !strings.Contains(f.Detail, "matches no prompt") {
					t.Errorf("enabled=%v mode=%v: fault = %+v", enabled, mode, f)
				}
			}
		}
	})
	t.Run("block without file overriding a broken entry is not stale", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "a", "A.")
		writeFile(t, root, "bad.md", "---\nname: bad\npromptforge: 1\n---\n")
		s := mdSettings(root)
		s.Blocks = map[string]Block{"bad": {Enabled: true}}
		c := mustResolve(t, s, Retain)
		if c.Len() != 2 {
			t.Errorf("names = %v", entryNames(c))
		}
	})
	t.Run("disabled block with a file is not read", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "a", "A.")
		s := mdSettings(root)
		s.Blocks = map[string]Block{"off": {Enabled: false, File: "missing.md"}}
		c := mustResolve(t, s, Reject)
		if got := entryNames(c); !slices.Equal(got, []string{"a"}) {
			t.Errorf("names = %v", got)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "a", "A.")
		s := mdSettings(root)
		s.Blocks = map[string]Block{"gone": {Enabled: true, File: "gone.md"}}
		c := mustResolve(t, s, Retain)
		e := entryNamed(t, c, "gone")
		if e.Kind() != KindUnreadable || !strings.HasPrefix(e.Problem(), "unreadable: ") {
			t.Errorf("gone = kind %v problem %q", e.Kind(), e.Problem())
		}
	})
	t.Run("escapes the root", func(t *testing.T) {
		base := t.TempDir()
		root := filepath.Join(base, "prompts")
		writePrompt(t, root, "a.md", "a", "A.")
		writePrompt(t, base, "outside.md", "outside", "Outside.")
		writePrompt(t, base, "climber.md", "climber", "Outside too.")
		if err := os.Symlink(filepath.Join(base, "outside.md"), filepath.Join(root, "link.md")); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
		s := Settings{Roots: []string{root}, Include: []string{"a.md"}, Blocks: map[string]Block{
			"outside": {Enabled: true, File: "link.md"},
			"climber": {Enabled: true, File: "../climber.md"},
		}}
		c := mustResolve(t, s, Retain)
		for _, n := range []string{"outside", "climber"} {
			e := entryNamed(t, c, n)
			if e.Kind() != KindUnreadable || e.Problem() != "resolves outside the prompts directory" {
				t.Errorf("%s = kind %v problem %q", n, e.Kind(), e.Problem())
			}
		}
	})
	t.Run("file without a promptforge version", func(t *testing.T) {
		root := t.TempDir()
		writePrompt(t, root, "a.md", "a", "A.")
		writeFile(t, root, "plain.md", strings.Replace(promptText("plain", "No version."), "promptforge: 1\n", "", 1))
		s := Settings{Roots: []string{root}, Blocks: map[string]Block{
			"a":     {Enabled: true, File: "a.md"},
			"plain": {Enabled: true, File: "plain.md"},
		}}
		c := mustResolve(t, s, Retain)
		e := entryNamed(t, c, "plain")
		if e.Kind() != KindUnparsable || !strings.HasPrefix(e.Problem(), "not a promptforge prompt") {
			t.Errorf("plain = kind %v problem %q", e.Kind(), e.Problem())
		}
	})
}

func TestWithin(t *testing.T) {
	root := filepath.FromSlash("/srv/prompts")
	tests := []struct {
		path string
		want bool
	}{
		{"/srv/prompts", true},
		{"/srv/prompts/a.md", true},
		{"/srv/prompts/deep/b.md", true},
		{"/srv/prompts-old/a.md", false},
		{"/srv/other/a.md", false},
		{"/srv", false},
	}
	for _, tt := range tests {
		if got := within(root, filepath.FromSlash(tt.path)); got != tt.want {
			t.Errorf("within(%q, %q) = %v, want %v", root, tt.path, got, tt.want)
		}
	}
}

func TestComparePaths(t *testing.T) {
	in := []string{"a-b", "a/b", "a", "b/a", "a/b/c"}
	slices.SortFunc(in, comparePaths)
	if want := []string{"a", "a/b", "a/b/c", "a-b", "b/a"}; !slices.Equal(in, want) {
		t.Errorf("sorted = %v, want %v", in, want)
	}
}

func TestResolveHonoursCancellation(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "a", "A.")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Resolve(ctx, mdSettings(root), Reject)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
