package prompt

import (
	"errors"
	"strings"
	"testing"
)

// header is a complete frontmatter of 5 lines: the body starts at line 6.
const header = "---\nname: test\ndescription: A test prompt.\npromptforge: 1\n---\n"

func mustParse(t *testing.T, body string) *Prompt {
	t.Helper()
	p, err := Parse([]byte(header + body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// parseErr parses src (a whole file) and returns its *ParseError.
func parseErr(t *testing.T, src string) *ParseError {
	t.Helper()
	p, err := Parse([]byte(src))
	if err == nil {
		t.Fatalf("Parse succeeded (%d sections), want an error", len(p.Sections))
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %T %v is not a *ParseError", err, err)
	}
	return pe
}

func wantParseErr(t *testing.T, src string, kind ErrorKind, msg string) *ParseError {
	t.Helper()
	pe := parseErr(t, src)
	if pe.Kind != kind {
		t.Errorf("kind = %d, want %d (msg %q)", pe.Kind, kind, pe.Msg)
	}
	if !strings.Contains(pe.Msg, msg) {
		t.Errorf("message %q does not contain %q", pe.Msg, msg)
	}
	return pe
}

// kinds summarises a block list, e.g. "lua prose* lua" (* = loop-capable).
func kinds(blocks []Block) string {
	var parts []string
	for _, b := range blocks {
		switch b.Kind {
		case BlockLua:
			parts = append(parts, "lua")
		case BlockProse:
			s := "prose"
			if b.LoopCapable {
				s += "*"
			}
			parts = append(parts, s)
		default:
			parts = append(parts, "?")
		}
	}
	return strings.Join(parts, " ")
}

func section(t *testing.T, p *Prompt, path ...string) *Section {
	t.Helper()
	list := p.Sections
	var s *Section
	for _, name := range path {
		s = nil
		for _, c := range list {
			if c.Name == name {
				s = c
			}
		}
		if s == nil {
			t.Fatalf("no section %q in path %v", name, path)
		}
		list = s.Children
	}
	return s
}
