package prompt

import (
	"strings"
	"testing"
)

func TestH1Rules(t *testing.T) {
	tests := []struct {
		name, body, msg string
		line            int
	}{
		{"none", "## Run\nDone.\n", "prompt requires an H1 title", 0},
		{"only preface text", "hello\n", "prompt requires an H1 title", 0},
		{"empty atx", "#\n## Run\n", "prompt H1 title must not be empty", 6},
		{"empty after trim", "#    \n", "prompt H1 title must not be empty", 6},
		{"only raw html", "# <span></span>\n", "prompt H1 title must not be empty", 6},
		{"two", "# A\n## Run\n# B\n", "prompt must contain exactly one H1 title", 8},
		{"setext second", "# A\n\nB\n===\n", "prompt must contain exactly one H1 title", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, header+tt.body, KindStructure, tt.msg)
			if pe.Msg != tt.msg || pe.Line != tt.line {
				t.Errorf("got %q at line %d, want %q at line %d", pe.Msg, pe.Line, tt.msg, tt.line)
			}
		})
	}
}

func TestHeadingText(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"# Plain", "Plain"},
		{"#   Padded   ", "Padded"},
		{"# *Emph* and **strong**", "Emph and strong"},
		{"# Use `code` here", "Use code here"},
		{"# [Link](http://example.com) text", "Link text"},
		{"# Escaped \\* star &amp; entity", "Escaped * star & entity"},
		{"# Closing hashes ##", "Closing hashes"},
		{"Setext *title*\n===", "Setext title"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			p := mustParse(t, tt.heading+"\n\n## Run\n")
			if p.Title != tt.want {
				t.Errorf("title = %q, want %q", p.Title, tt.want)
			}
		})
	}
}

func TestPrefaceIgnoredAndH1ProseKept(t *testing.T) {
	body := "Preface text.\n\n```lua\nthis is not compiled (\n```\n\n## Not a section\n\n# Title\n\nThis prompt does a thing.\n\n## Run\nGo.\n"
	p := mustParse(t, body)
	if p.Title != "Title" {
		t.Errorf("title %q", p.Title)
	}
	if kinds(p.H1) != "prose*" || p.H1[0].Text != "This prompt does a thing." || p.H1[0].Line != 16 {
		t.Errorf("H1 blocks %q %+v", kinds(p.H1), p.H1)
	}
	if len(p.Sections) != 1 || p.Sections[0].Name != "Run" {
		t.Errorf("sections %+v", p.Sections)
	}
}

func TestH1OnlyPrompt(t *testing.T) {
	p := mustParse(t, "# Only\n\n```lua\nreturn 'x'\n```\n")
	if len(p.Sections) != 0 {
		t.Errorf("%d sections, want 0", len(p.Sections))
	}
	if kinds(p.H1) != "lua" {
		t.Errorf("H1 blocks %q, want lua", kinds(p.H1))
	}
}

func TestSectionTree(t *testing.T) {
	body := "# T\n## A\n### A1\n#### A1x\n### A2\n## B\n### A1\n"
	p := mustParse(t, body)
	var got []string
	p.Walk(func(s *Section) bool {
		got = append(got, strings.Repeat(">", s.Level-2)+s.Name)
		return true
	})
	if want := "A >A1 >>A1x >A2 B >A1"; strings.Join(got, " ") != want {
		t.Errorf("walk = %q, want %q", strings.Join(got, " "), want)
	}
	if s := section(t, p, "A", "A1", "A1x"); s.Level != 4 || s.Line != 9 {
		t.Errorf("A1x level %d line %d", s.Level, s.Line)
	}
	// Walk stops when asked.
	n := 0
	p.Walk(func(*Section) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("walk visited %d after stop, want 2", n)
	}
}

func TestFirstSectionIsEntryWhateverItsName(t *testing.T) {
	p := mustParse(t, "# T\n## Zeta\nz\n## Main\nm\n")
	if p.Sections[0].Name != "Zeta" {
		t.Errorf("first section %q, want Zeta", p.Sections[0].Name)
	}
}

func TestOrphanHeadings(t *testing.T) {
	tests := []struct{ name, body, msg string }{
		{"top-level H3", "# T\n### Deep\n", "section `Deep` is an orphan H3 heading with no parent H2"},
		{"skipped level", "# T\n## A\n#### Deep\n", "section `Deep` is an orphan H4 heading with no parent H3"},
		{"after popping", "# T\n## A\n### B\n## C\n#### D\n", "section `D` is an orphan H4 heading with no parent H3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, header+tt.body, KindStructure, tt.msg)
			if pe.Msg != tt.msg {
				t.Errorf("message %q, want %q", pe.Msg, tt.msg)
			}
		})
	}
}

func TestEmptySectionHeading(t *testing.T) {
	for _, tt := range []struct{ body, msg string }{
		{"# T\n##\n", "an H2 section heading must not be empty"},
		{"# T\n## A\n###   \n", "an H3 section heading must not be empty"},
	} {
		pe := wantParseErr(t, header+tt.body, KindStructure, tt.msg)
		if pe.Msg != tt.msg {
			t.Errorf("message %q, want %q", pe.Msg, tt.msg)
		}
	}
}

func TestDuplicateSiblings(t *testing.T) {
	src := header + "# T\n## Step\none\n## Other\n## Step\ntwo\n"
	pe := wantParseErr(t, src, KindStructure, "")
	want := "duplicate sibling section name `Step`: first declared at line 7, again at line 10; sibling section names must be unique"
	if pe.Msg != want {
		t.Errorf("message %q\nwant    %q", pe.Msg, want)
	}
	if pe.Line != 10 {
		t.Errorf("line %d, want 10", pe.Line)
	}
	if got := src[pe.Span.Start:pe.Span.End]; got != "## Step\n" {
		t.Errorf("span covers %q, want the second heading", got)
	}

	// Same name under different parents or levels is fine.
	p := mustParse(t, "# T\n## A\n### Step\n## B\n### Step\n#### Step\n")
	if section(t, p, "B", "Step", "Step").Level != 4 {
		t.Error("nested same-name section missing")
	}
}

func TestDuplicateSpanMapsToOriginalBytes(t *testing.T) {
	src := "\ufeff" + strings.ReplaceAll(header+"# T\n## Step\n## Step\n", "\n", "\r\n")
	pe := parseErr(t, src)
	if got := src[pe.Span.Start:pe.Span.End]; got != "## Step\r\n" {
		t.Errorf("span covers %q, want the second heading with its CRLF", got)
	}
}

func TestSectionContentEndsAtAnyHeading(t *testing.T) {
	p := mustParse(t, "# T\n## A\nbefore child\n### A1\nchild text\n## B\nsetext child\n\nChild\n---\nunder setext\n")
	if got := section(t, p, "A").Prose(); got != "before child" {
		t.Errorf("A prose %q", got)
	}
	if got := section(t, p, "A", "A1").Prose(); got != "child text" {
		t.Errorf("A1 prose %q", got)
	}
	if got := section(t, p, "B").Prose(); got != "setext child" {
		t.Errorf("B prose %q", got)
	}
	// "Child\n---" is a setext H2 (not a rule), so it is a new section.
	c := section(t, p, "Child")
	if c.OffWalk || c.Prose() != "under setext" || c.Line != 14 {
		t.Errorf("setext section: offwalk %v prose %q line %d", c.OffWalk, c.Prose(), c.Line)
	}
}

func TestNestedContainerHeadingsAreProse(t *testing.T) {
	p := mustParse(t, "# T\n## A\n> ## Quoted\n> text\n\n- ## In a list\n")
	if len(p.Sections) != 1 || len(p.Sections[0].Children) != 0 {
		t.Fatalf("sections %+v", p.Sections)
	}
	if got := p.Sections[0].Prose(); !strings.Contains(got, "## Quoted") || !strings.Contains(got, "## In a list") {
		t.Errorf("prose %q lost the quoted headings", got)
	}
}
