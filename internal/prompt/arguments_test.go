package prompt

import (
	"reflect"
	"testing"
)

func TestArgumentsParsed(t *testing.T) {
	src := "---\nname: x\ndescription: d\narguments:\n" +
		"  - name: topic\n    description: What to write about.\n    required: true\n" +
		"  - name: count\n    type: integer\n    default: 3\n" +
		"  - name: ratio\n    type: number\n    default: 0.5\n" +
		"  - name: loud\n    type: boolean\n    default: false\n" +
		"---\n# T\n"
	p, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Argument{
		{Name: "topic", Description: "What to write about.", Type: ArgString, Required: true},
		{Name: "count", Type: ArgInteger, Default: float64(3)},
		{Name: "ratio", Type: ArgNumber, Default: 0.5},
		{Name: "loud", Type: ArgBoolean, Default: false},
	}
	if !reflect.DeepEqual(p.Frontmatter.Arguments, want) {
		t.Errorf("arguments = %#v\nwant %#v", p.Frontmatter.Arguments, want)
	}
}

func TestNoArgumentsIsNil(t *testing.T) {
	for _, src := range []string{
		"---\nname: x\ndescription: d\n---\n# T\n",
		"---\nname: x\ndescription: d\narguments: []\n---\n# T\n",
	} {
		p, err := Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if p.Frontmatter.Arguments != nil {
			t.Errorf("%q: arguments = %#v, want nil", src, p.Frontmatter.Arguments)
		}
	}
}

func TestArgumentErrors(t *testing.T) {
	const head = "---\nname: x\ndescription: d\narguments:\n"
	tests := []struct {
		name, yaml string
		line       int
		msg        string
	}{
		{"not a list", "  topic: 1\n", 5, "`arguments` must be a list"},
		{"entry not a mapping", "  - topic\n", 5, "`arguments[0]` must be a mapping"},
		{"no name", "  - type: string\n", 5, "missing required key `arguments[0].name`"},
		{"bad name", "  - name: Topic\n", 5, `argument name "Topic" must match`},
		{"unknown key", "  - name: topic\n    kind: string\n", 6, "unknown field \"kind\""},
		{"bad type", "  - name: topic\n    type: text\n", 6, `argument "topic" has type "text"; use string, integer, number or boolean`},
		{"type not a string", "  - name: topic\n    type: 3\n", 6, "`arguments[0].type` must be a string"},
		{"required not bool", "  - name: topic\n    required: yes please\n", 6, "`arguments[0].required` must be true or false"},
		{"default wrong type", "  - name: n\n    type: integer\n    default: 2.5\n", 7, `the default of argument "n" must be an integer, got the number 2.5`},
		{"string default a number", "  - name: s\n    default: 4\n", 6, `the default of argument "s" must be a string`},
		{"required with default", "  - name: s\n    required: true\n    default: a\n", 7, `argument "s" is required and has a default`},
		{"duplicate", "  - name: s\n  - name: s\n", 6, `argument "s" is declared twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := wantParseErr(t, head+tt.yaml+"---\n# T\n", KindFrontmatter, tt.msg)
			if pe.Line != tt.line {
				t.Errorf("line %d, want %d (%s)", pe.Line, tt.line, pe.Msg)
			}
		})
	}
}
