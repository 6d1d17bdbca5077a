package prompt

import (
	"os"
	"testing"
)

func BenchmarkParse200Lines(b *testing.B) {
	src, err := os.ReadFile("testdata/bench200.md")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Parse(src); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSubstitute(b *testing.B) {
	text := "Find recent news about {{ args }} for {{ var.company }}.\nEscaped \\{{ literal \\}} and a path C:\\dir.\n{{ tbl }}"
	run := testRun()
	run.vars["company"] = "Acme"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Substitute(text, run.resolve); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBenchPromptShape(t *testing.T) {
	src, err := os.ReadFile("testdata/bench200.md")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sections) != 10 || p.Shared == nil || kinds(p.H1) != "lua prose*" {
		t.Fatalf("sections %d shared %v H1 %q", len(p.Sections), p.Shared != nil, kinds(p.H1))
	}
	cl := section(t, p, "Checklist")
	if !cl.OffWalk || len(cl.Items) != 5 {
		t.Errorf("checklist offwalk %v items %q", cl.OffWalk, cl.Items)
	}
	if s := section(t, p, "Summary"); kinds(s.Blocks) != "lua prose* lua" {
		t.Errorf("summary blocks %q (comment region should be excluded)", kinds(s.Blocks))
	}
	if s := section(t, p, "Appendix", "Sources"); !s.OffWalk || s.Prologue() == nil {
		t.Errorf("appendix sources offwalk %v", s.OffWalk)
	}
}
