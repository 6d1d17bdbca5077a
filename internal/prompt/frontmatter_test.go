package prompt

import (
	"errors"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestMinimalPrompt(t *testing.T) {
	p := mustParse(t, "# Test\n\n## Run\n\nDone.\n")
	fm := p.Frontmatter
	if fm.Name != "test" || fm.Description != "A test prompt." || fm.Version != 1 || !fm.HasVersion {
		t.Errorf("frontmatter = %+v", fm)
	}
	if p.Title != "Test" || p.TitleLine != 6 {
		t.Errorf("title = %q at line %d, want Test at 6", p.Title, p.TitleLine)
	}
	if len(p.H1) != 0 || p.Shared != nil {
		t.Errorf("H1 blocks %q, shared %v: want none", kinds(p.H1), p.Shared)
	}
	if len(p.Sections) != 1 {
		t.Fatalf("%d sections, want 1", len(p.Sections))
	}
	s := p.Sections[0]
	if s.Name != "Run" || s.Level != 2 || s.Line != 8 {
		t.Errorf("section = %q H%d line %d", s.Name, s.Level, s.Line)
	}
	if s.Prose() != "Done." || s.Prologue() != nil || s.Epilog() != nil {
		t.Errorf("prose %q prologue %v epilog %v", s.Prose(), s.Prologue(), s.Epilog())
	}
}

func TestFrontmatterNameAndDescriptionSuffice(t *testing.T) {
	p, err := Parse([]byte("---\nname: x\ndescription: d\n---\n# T\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Frontmatter.HasVersion || p.Frontmatter.Version != 0 {
		t.Errorf("version = %d (has %v), want absent", p.Frontmatter.Version, p.Frontmatter.HasVersion)
	}
}

func TestFrontmatterDelimiters(t *testing.T) {
	tests := []struct {
		name, src, msg string
	}{
		{"no opening", "name: x\ndescription: d\n---\n# T\n", "file must begin with a --- frontmatter delimiter"},
		{"blank first line", "\n---\nname: x\ndescription: d\n---\n# T\n", "file must begin with a --- frontmatter delimiter"},
		{"empty file", "", "file must begin with a --- frontmatter delimiter"},
		{"unclosed", "---\nname: x\ndescription: d\n# T\n", "frontmatter was not closed with ---"},
		{"only opener", "---\n", "frontmatter was not closed with ---"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, tt.src, KindFrontmatter, tt.msg)
			if pe.Msg != tt.msg {
				t.Errorf("message %q, want exactly %q", pe.Msg, tt.msg)
			}
		})
	}
}

func TestFrontmatterBOMAndCRLF(t *testing.T) {
	src := "\ufeff  ---  \r\nname: x\r\ndescription: d\r\n---\r\n# T\r\n\r\n## Run\r\n```lua\r\nerror('boom')\r\n```\r\nGo.\r\n"
	p, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != "T" || p.TitleLine != 5 {
		t.Errorf("title %q line %d", p.Title, p.TitleLine)
	}
	s := p.Sections[0]
	if s.Line != 7 || s.Prologue().Line != 9 || s.Prose() != "Go." {
		t.Errorf("section line %d, prologue line %d, prose %q", s.Line, s.Prologue().Line, s.Prose())
	}
	if strings.Contains(s.Prologue().Source, "\r") {
		t.Errorf("source keeps \\r: %q", s.Prologue().Source)
	}
}

func TestFrontmatterUnknownKey(t *testing.T) {
	pe := wantParseErr(t, "---\nname: x\ndescription: d\nmodel: gpt\n---\n# T\n", KindFrontmatter, "invalid frontmatter: ")
	if !strings.Contains(pe.Msg, `unknown field "model"`) || pe.Line != 4 {
		t.Errorf("msg %q line %d, want the unknown field at line 4", pe.Msg, pe.Line)
	}
}

func TestFrontmatterInvalidYAMLKeepsCause(t *testing.T) {
	pe := wantParseErr(t, "---\nname: [x\ndescription: d\n---\n# T\n", KindFrontmatter, "invalid frontmatter: ")
	var ye yaml.Error
	if !errors.As(pe, &ye) {
		t.Fatalf("cause %T is not a yaml.Error", pe.Err)
	}
	if !strings.Contains(pe.Msg, ye.GetMessage()) {
		t.Errorf("message %q does not carry the YAML message %q", pe.Msg, ye.GetMessage())
	}
}

func TestFrontmatterFieldTypes(t *testing.T) {
	tests := []struct {
		name, yaml, msg string
		line            int
	}{
		{"missing name", "description: d", "missing required key `name`", 0},
		{"missing description", "name: x", "missing required key `description`", 0},
		{"null name", "name: ~\ndescription: d", "missing required key `name`", 0},
		{"integer name", "name: 123\ndescription: d", "`name` must be a string", 2},
		{"list description", "name: x\ndescription: [a]", "`description` must be a string", 3},
		{"float version", "name: x\ndescription: d\npromptforge: 1.5", "`promptforge` must be an integer", 4},
		{"negative version", "name: x\ndescription: d\npromptforge: -1", "`promptforge` must be an unsigned integer", 4},
		{"string version", "name: x\ndescription: d\npromptforge: one", "`promptforge` must be an integer", 4},
		{"duplicate key", "name: x\nname: y\ndescription: d", "already defined", 3},
		{"not a mapping", "just text", "mapping", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, "---\n"+tt.yaml+"\n---\n# T\n", KindFrontmatter, tt.msg)
			if !strings.HasPrefix(pe.Msg, "invalid frontmatter: ") {
				t.Errorf("message %q lacks the invalid frontmatter prefix", pe.Msg)
			}
			if tt.line != 0 && pe.Line != tt.line {
				t.Errorf("line = %d, want %d", pe.Line, tt.line)
			}
		})
	}
}

func TestMaxToolIterations(t *testing.T) {
	tests := []struct {
		value   string // "" = key absent
		want    int
		wantErr string
	}{
		{"", 0, ""},
		{"3", 3, ""},
		{"1", 1, ""},
		{"1000", 1000, ""},
		{"0", 0, "max_tool_iterations must be a positive integer (>= 1), got 0"},
		{"-5", 0, "max_tool_iterations must be a positive integer (>= 1), got -5"},
		{"1001", 0, "max_tool_iterations must be <= 1000, got 1001"},
		{"99999999999999999999", 0, "max_tool_iterations must be"},
		{"2.5", 0, "`max_tool_iterations` must be an integer"},
		{"many", 0, "`max_tool_iterations` must be an integer"},
	}
	for _, tt := range tests {
		t.Run("value="+tt.value, func(t *testing.T) {
			y := "---\nname: x\ndescription: d\n"
			if tt.value != "" {
				y += "max_tool_iterations: " + tt.value + "\n"
			}
			src := y + "---\n# T\n"
			if tt.wantErr != "" {
				pe := wantParseErr(t, src, KindFrontmatter, tt.wantErr)
				if pe.Line != 4 {
					t.Errorf("line = %d, want 4", pe.Line)
				}
				return
			}
			p, err := Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			fm := p.Frontmatter
			if fm.MaxToolIterations != tt.want {
				t.Errorf("MaxToolIterations = %d, want %d", fm.MaxToolIterations, tt.want)
			}
			wantResolved := tt.want
			if tt.value == "" {
				wantResolved = DefaultMaxToolIterations
			}
			if got := fm.ResolveMaxToolIterations(DefaultMaxToolIterations); got != wantResolved {
				t.Errorf("resolved = %d, want %d", got, wantResolved)
			}
		})
	}
}

func TestFrontmatterInputOutput(t *testing.T) {
	p, err := Parse([]byte("---\nname: x\ndescription: d\ninput:\n  path: in/data.csv\n  description: rows to read\noutput: {path: out.md, description: the report}\n---\n# T\n"))
	if err != nil {
		t.Fatal(err)
	}
	fm := p.Frontmatter
	if fm.Input == nil || *fm.Input != (FileDecl{Path: "in/data.csv", Description: "rows to read"}) {
		t.Errorf("input = %+v", fm.Input)
	}
	if fm.Output == nil || *fm.Output != (FileDecl{Path: "out.md", Description: "the report"}) {
		t.Errorf("output = %+v", fm.Output)
	}
	p = mustParse(t, "# T\n")
	if p.Frontmatter.Input != nil || p.Frontmatter.Output != nil {
		t.Errorf("absent input/output = %+v / %+v, want nil", p.Frontmatter.Input, p.Frontmatter.Output)
	}

	bad := []struct{ name, yaml, msg string }{
		{"missing description", "input: {path: a}", "missing required key `input.description`"},
		{"missing path", "output: {description: a}", "missing required key `output.path`"},
		{"extra key", "input: {path: a, description: b, mode: r}", `unknown field "mode"`},
		{"not a map", "input: a.txt", "`input` must be a mapping"},
		{"path not string", "input: {path: 3, description: b}", "`input.path` must be a string"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			wantParseErr(t, "---\nname: x\ndescription: d\n"+tt.yaml+"\n---\n# T\n", KindFrontmatter, tt.msg)
		})
	}
}

func TestVersionProbe(t *testing.T) {
	tests := []struct {
		name, src string
		want      uint64
		ok        bool
	}{
		{"declared", header + "# T\n", 1, true},
		{"only the key", "---\npromptforge: 2\n---\n", 2, true},
		{"unknown keys are fine", "---\npromptforge: 1\nwhatever: [1, 2]\n---\nbody", 1, true},
		{"bom and crlf", "\ufeff---\r\npromptforge: 1\r\n---\r\n", 1, true},
		{"absent key", "---\nname: x\ndescription: d\n---\n# T\n", 0, false},
		{"no frontmatter", "# Just markdown\n", 0, false},
		{"unclosed", "---\npromptforge: 1\n", 0, false},
		{"malformed yaml", "---\npromptforge: 1\nname: [\n---\n", 0, false},
		{"negative", "---\npromptforge: -1\n---\n", 0, false},
		{"float", "---\npromptforge: 1.5\n---\n", 0, false},
		{"string", "---\npromptforge: one\n---\n", 0, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Version([]byte(tt.src))
			if got != tt.want || ok != tt.ok {
				t.Errorf("Version = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
