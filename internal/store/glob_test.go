package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func sprintfQ(s string) string { return fmt.Sprintf("%q", s) }

func TestGlobMatching(t *testing.T) {
	s := New()
	files := []string{
		"a.md", "b.txt", "x", "notes/a.md", "notes/b.md", "notes/deep/c.md", "notes/deep/er/d.md",
		"other/notes/e.md", "q?.md", "[x].md", "star*.md", "xa/b",
	}
	for _, f := range files {
		mustWrite(t, s, f, f)
	}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"*.md", []string{"[x].md", "a.md", "q?.md", "star*.md"}},
		{"notes/*.md", []string{"notes/a.md", "notes/b.md"}},
		{"notes/*", []string{"notes/a.md", "notes/b.md"}},
		{"**/*.md", []string{"[x].md", "a.md", "notes/a.md", "notes/b.md", "notes/deep/c.md",
			"notes/deep/er/d.md", "other/notes/e.md", "q?.md", "star*.md"}},
		{"**/x", []string{"x"}},
		{"notes/**/c.md", []string{"notes/deep/c.md"}},
		{"notes/**/*.md", []string{"notes/a.md", "notes/b.md", "notes/deep/c.md", "notes/deep/er/d.md"}},
		{"notes/**", []string{"notes/a.md", "notes/b.md", "notes/deep/c.md", "notes/deep/er/d.md"}},
		{"**", files},
		{"**/notes/*.md", []string{"notes/a.md", "notes/b.md", "other/notes/e.md"}},
		{"q?.md", []string{"q?.md"}},
		{"?.md", []string{}},
		{"[x].md", []string{"[x].md"}},
		{"[ab].md", []string{}},
		{"*/b", []string{"xa/b"}},
		{"x*", []string{"x"}},
		{"n*s/a.md", []string{"notes/a.md"}},
		{"*a*", []string{"a.md", "star*.md"}},
		{"nothing/**", []string{}},
		{"/a.md", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			got, err := s.Glob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Fatalf("Glob(%q) = %q, want %q", tt.pattern, got, want)
			}
		})
	}
}

func TestGlobResultsAreSortedAndNonNil(t *testing.T) {
	s := New()
	for _, f := range []string{"z.md", "m.md", "a.md", "B.md"} {
		mustWrite(t, s, f, "")
	}
	got, err := s.Glob("*.md")
	if err != nil || !slices.Equal(got, []string{"B.md", "a.md", "m.md", "z.md"}) {
		t.Fatalf("Glob = %q, %v; want byte-sorted", got, err)
	}
	got, err = s.Glob("none")
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Glob(no match) = %#v, %v; want an empty non-nil slice", got, err)
	}
}

func TestGlobRejectsBadPatterns(t *testing.T) {
	s := New()
	tests := []struct{ pattern, reason string }{
		{"", "the pattern is empty"},
		{strings.Repeat("a", 1025), "the pattern is longer than 1024 bytes"},
		{"a\tb", "the pattern contains a control character"},
		{"a\x00", "the pattern contains a control character"},
		{`a\*`, "the pattern contains a backslash; every character but * is literal"},
		{"***", "more than two consecutive *"},
		{"a/***/b", "more than two consecutive *"},
		{"a**", "** must be a whole path segment"},
		{"**b/c", "** must be a whole path segment"},
		{"a/x**y", "** must be a whole path segment"},
	}
	for _, tt := range tests {
		_, err := s.Glob(tt.pattern)
		wantErr(t, err, KindInvalidGlob, "invalid glob pattern "+sprintfQ(tt.pattern)+": "+tt.reason)
	}
	if _, err := s.Glob(strings.Repeat("a", 1024)); err != nil {
		t.Fatalf("a 1024-byte pattern: %v", err)
	}
}

// TestGlobAdversarial feeds patterns that make a backtracking matcher go
// exponential. The matcher's work is bounded by path × pattern length, so
// these finish at once; the test checks the answers, not the time.
func TestGlobAdversarial(t *testing.T) {
	s := New()
	long := strings.Repeat("a", 1000)
	deep := strings.TrimSuffix(strings.Repeat("a/", 500), "/")
	mustWrite(t, s, long, "")
	mustWrite(t, s, long[:999]+"b", "")
	mustWrite(t, s, deep, "")
	tests := []struct {
		pattern string
		want    []string
	}{
		{"*a*a*a*a*a*a*a*a*b", []string{long[:999] + "b"}},
		{strings.Repeat("*a", 40) + "*c", []string{}},
		{strings.Repeat("**/a/", 60) + "b", []string{}},
		{strings.Repeat("**/a/", 60) + "a", []string{deep}},
		{strings.Repeat("*/", 499) + "*", []string{deep}},
	}
	for _, tt := range tests {
		got, err := s.Glob(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.want) {
			t.Fatalf("Glob(%.40q…) = %d paths, want %d", tt.pattern, len(got), len(tt.want))
		}
	}
}
