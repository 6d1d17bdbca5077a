package prompt

import (
	"reflect"
	"strings"
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

func TestBind(t *testing.T) {
	decl := []Argument{
		{Name: "topic", Type: ArgString, Required: true},
		{Name: "n", Type: ArgInteger, Default: float64(2)},
		{Name: "on", Type: ArgBoolean},
		{Name: "r", Type: ArgNumber},
	}
	b, err := Bind("p", decl, map[string]any{"topic": "<go>", "on": "true", "r": " 1.5 ", "n": ""}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":2,"on":true,"r":1.5,"topic":"<go>"}`; b.Args != want {
		t.Errorf("text: args %s, want %s", b.Args, want)
	}
	b, err = Bind("p", decl, map[string]any{"topic": "go", "n": float64(7)}, false)
	if err != nil || b.Args != `{"n":7,"topic":"go"}` || len(b.Params) != 2 {
		t.Errorf("json: %+v %v", b, err)
	}
	for _, tt := range []struct {
		given map[string]any
		text  bool
		want  string
	}{
		{map[string]any{"topic": "go", "on": "yes"}, true, `argument "on" of prompt "p" must be a boolean, got "yes"`},
		{map[string]any{"topic": "go", "n": "1e400"}, true, `argument "n" of prompt "p" must be an integer, got "1e400"`},
		{map[string]any{"topic": "go", "n": float64(1 << 54)}, false, `must be an integer, got 18014398509481984`},
		{map[string]any{"topic": ""}, true, `prompt "p" needs argument "topic" (string); its arguments are topic (string, required), n (integer), on (boolean), r (number)`},
		{map[string]any{"b": 1, "a": 1, "topic": "x"}, false, `prompt "p" has no argument "a"`},
	} {
		if _, err := Bind("p", decl, tt.given, tt.text); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.given, err, tt.want)
		}
	}
}
