package prompt

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	if src, err := os.ReadFile("testdata/bench200.md"); err == nil {
		f.Add(string(src))
	}
	f.Add(header + "# T\n## Run\nDone.\n")
	f.Add(header + "# T\n```lua shared\nx = 1\n```\n## S\n---\n- a\n- b\n---\nnote\n### C\n```lua\ny = (\n```\n")
	f.Add("\ufeff---\r\nname: x\r\ndescription: d\r\n---\r\nT\r\n=\r\n````\r\n```lua\r\n````\r\n")
	f.Add(header + "# T\n## A\n#### B\n")
	f.Add("---\nname: [\n---\n")
	f.Add(header + "# T\n## S\n```lua\nx = 1\n````\n## N\n```\n")
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse([]byte(src))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Msg == "" {
				t.Fatalf("error %T %q is not a described *ParseError", err, err)
			}
			if pe.Span != (Span{}) && (pe.Span.Start < 0 || pe.Span.End > len(src) || pe.Span.Start > pe.Span.End) {
				t.Fatalf("span %+v outside the %d-byte file", pe.Span, len(src))
			}
			return
		}
		lines := strings.Count(src, "\n") + 1
		p.Walk(func(s *Section) bool {
			if s.Line < 1 || s.Line > lines || s.Level < 2 || s.Level > 6 {
				t.Fatalf("section %q level %d line %d out of range (%d lines)", s.Name, s.Level, s.Line, lines)
			}
			for _, b := range s.Blocks {
				if b.Kind == BlockLua && (b.Lua == nil || b.Lua.Proto == nil) {
					t.Fatalf("uncompiled Lua block in %q", s.Name)
				}
			}
			return true
		})
		_, _ = Version([]byte(src))
	})
}

func FuzzSubstitute(f *testing.F) {
	f.Add("{{ args }} \\{{ x \\}} {{ var.a.b }}")
	f.Add("{{ reply.x }} {{")
	f.Add("\\\\{{ ghost }}")
	run := testRun()
	f.Fuzz(func(t *testing.T, text string) {
		out, err := Substitute(text, run.resolve)
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) || te.Offset < 0 || te.Offset >= len(text) || !strings.HasPrefix(text[te.Offset:], "{{") {
				t.Fatalf("error %v does not point at a placeholder", err)
			}
			return
		}
		if !strings.Contains(text, "{{") && !strings.Contains(text, "\\") && out != text {
			t.Fatalf("plain text changed: %q -> %q", text, out)
		}
	})
}
