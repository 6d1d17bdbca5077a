package prompt

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fakeRun is a resolver over fixed data, shaped the way the engine's is:
// args, reply and item strings, var and sys objects, globals viewed as JSON.
type fakeRun struct {
	args    string
	reply   *string
	item    any // nil outside an arm
	vars    map[string]any
	sys     map[string]any
	globals map[string]any
	funcs   map[string]string // globals holding non-JSON values, by Lua type
}

func (r fakeRun) resolve(p Path) (string, error) {
	switch p.Head {
	case "args":
		return r.args, nil
	case "reply":
		if r.reply == nil {
			return "", NilReplyError()
		}
		return *r.reply, nil
	case "item":
		if r.item == nil {
			return "", NilItemError()
		}
		return RenderValue(r.item)
	case "var":
		return RenderPath(p, r.vars)
	case "sys":
		return RenderPath(p, r.sys)
	}
	if typ, ok := r.funcs[p.Head]; ok {
		return "", NotJSONError(p, typ)
	}
	g, ok := r.globals[p.Head]
	if !ok {
		return "", UnknownNamespaceError(p)
	}
	return RenderPath(p, g)
}

func testRun() fakeRun {
	reply := "previous answer"
	return fakeRun{
		args:  "Ada Lovelace",
		reply: &reply,
		vars: map[string]any{
			"x":     "clip",
			"n":     float64(3),
			"obj":   map[string]any{"b": "deep", "z": float64(1), "a": []any{true, nil, 2.5}},
			"empty": nil,
			"text":  "plain",
		},
		sys: map[string]any{"section_name": "Run", "section_count": int64(2)},
		globals: map[string]any{
			"count": float64(42),
			"ratio": 0.25,
			"flag":  false,
			"tbl":   map[string]any{"name": "t", "list": []any{"a", "b"}, "html": "<b>&</b>"},
			"arr":   []any{float64(1), "two", map[string]any{}},
			"inj":   "{{ args }}",
		},
		funcs: map[string]string{"fn": "a function"},
	}
}

func TestSubstituteResolves(t *testing.T) {
	run := testRun()
	arm := testRun()
	arm.item = map[string]any{"key": "k", "value": float64(7)}
	strArm := testRun()
	strArm.item = "member"
	tests := []struct {
		name, text, want string
		run              fakeRun
	}{
		{"args", "Research: {{ args }}.", "Research: Ada Lovelace.", run},
		{"unpadded", "{{args}}", "Ada Lovelace", run},
		{"var", "{{ var.x }}/{{ var.n }}/{{ var.obj.b }}", "clip/3/deep", run},
		{"sys", "{{ sys.section_name }} of {{ sys.section_count }}", "Run of 2", run},
		{"reply present", "Earlier: {{ reply }}", "Earlier: previous answer", run},
		{"item table", "{{ item }}", `{"key":"k","value":7}`, arm},
		{"item string", "{{ item }}", "member", strArm},
		{"global scalar", "{{ count }} {{ ratio }} {{ flag }}", "42 0.25 false", run},
		{"global dotted", "{{ tbl.name }}", "t", run},
		{"global table as JSON", "{{ tbl }}", `{"html":"<b>&</b>","list":["a","b"],"name":"t"}`, run},
		{"array as JSON", "{{ arr }} {{ var.obj }}", `[1,"two",{}] {"a":[true,null,2.5],"b":"deep","z":1}`, run},
		{"no placeholders", "plain text with } and { braces", "plain text with } and { braces", run},
		{"multibyte around", "é{{ args }}ü", "éAda Lovelaceü", run},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Substitute(tt.text, tt.run.resolve)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSubstituteEscapes(t *testing.T) {
	run := testRun()
	tests := []struct{ text, want string }{
		{`\{{ args }}`, "{{ args }}"},
		{`\{{ args \}}`, "{{ args }}"},
		{`a \\ b`, `a \ b`},
		{`\\{{ args }}`, `\Ada Lovelace`},
		{`\{{{ args }}`, "{Ada Lovelace"},
		{`{{ args }}\}`, "Ada Lovelace}"},
		{`C:\path\to\file`, `C:\path\to\file`},
		{`trailing \`, `trailing \`},
		{`\n is not an escape`, `\n is not an escape`},
		{"{{ inj }}", "{{ args }}"}, // substituted text is never rescanned
		{"{{ args }}{{ inj }}", "Ada Lovelace{{ args }}"},
		{"} }} {", "} }} {"},
		{"{= args =} is not a template", "{= args =} is not a template"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := Substitute(tt.text, run.resolve)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSubstituteErrors(t *testing.T) {
	first := testRun()
	first.reply = nil
	tests := []struct {
		name, text string
		run        fakeRun
		kind       TemplateErrorKind
		offset     int
		msg        string
	}{
		{"unclosed", "ab {{ args", testRun(), TplUnclosed, 3, "unclosed"},
		{"unclosed after good", "{{ args }} {{ var.x }", testRun(), TplUnclosed, 11, "unclosed"},
		{"empty", "{{ }}", testRun(), TplBadPath, 0, "bad path"},
		{"empty segment", "x {{ var..x }}", testRun(), TplEmptySegment, 2, "empty segment in {{ var..x }}"},
		{"trailing dot", "{{ var. }}", testRun(), TplEmptySegment, 0, "empty segment"},
		{"leading dot", "{{ .x }}", testRun(), TplEmptySegment, 0, "empty segment"},
		{"blank segment", "{{ var. .x }}", testRun(), TplEmptySegment, 0, "empty segment in {{ var. .x }}"},
		{"tab segment", "{{ var.\t.x }}", testRun(), TplEmptySegment, 0, "empty segment"},
		{"padded segment", "{{ var. x }}", testRun(), TplBadPath, 0, "surrounding whitespace"},
		{"padded before dot", "{{ var .x }}", testRun(), TplBadPath, 0, "surrounding whitespace"},
		{"bare var", "{{ var }}", testRun(), TplBadPath, 0, "bad path"},
		{"bare sys", "{{sys}}", testRun(), TplBadPath, 0, "bad path"},
		{"dotted args", "{{ args.x }}", testRun(), TplNotATable, 0, "args is a string, not a table"},
		{"dotted reply", "{{ reply.x }}", testRun(), TplNotATable, 0, "reply is a string, not a table"},
		{"dotted item", "{{ item.key }}", testRun(), TplNotATable, 0, "item is a string, not a table"},
		{"missing var key", "é {{ var.nope }}", testRun(), TplMissingKey, 3, "missing {{ var.nope }}"},
		{"missing nested", "{{ var.obj.nope }}", testRun(), TplMissingKey, 0, "missing {{ var.obj.nope }}"},
		{"null value", "{{ var.empty }}", testRun(), TplNullValue, 0, "missing {{ var.empty }}"},
		{"step into string", "{{ var.text.len }}", testRun(), TplNotATable, 0, "var.text is a string, not a table"},
		{"index an array", "{{ tbl.list.1 }}", testRun(), TplNotATable, 0, "tbl.list is an array, not a table"},
		{"nil reply", "{{ reply }}", first, TplNilReply, 0, "{{ reply }} is nil (no prior section reply)"},
		{"nil item", "{{ item }}", testRun(), TplNilItem, 0, "{{ item }} is nil (not inside a fanout arm)"},
		{"unknown global", "{{ ghost }}", testRun(), TplUnknownNamespace, 0, "unknown namespace or global 'ghost' in {{ ghost }}"},
		{"non-JSON global", "{{ fn }}", testRun(), TplSerialize, 0, "global 'fn' in {{ fn }} is not JSON data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Substitute(tt.text, tt.run.resolve)
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("error %v (%T) is not a *TemplateError", err, err)
			}
			if te.Kind != tt.kind || te.Offset != tt.offset || !strings.Contains(te.Msg, tt.msg) {
				t.Errorf("got %s %d %q, want %s %d containing %q", te.Kind, te.Offset, te.Msg, tt.kind, tt.offset, tt.msg)
			}
			if want := fmt.Sprintf("%s [%s at byte %d]", te.Msg, tt.kind, tt.offset); err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestSubstituteWrapsForeignResolverErrors(t *testing.T) {
	cause := errors.New("the VM is gone")
	_, err := Substitute("ok {{ x }}", func(Path) (string, error) { return "", cause })
	var te *TemplateError
	if !errors.As(err, &te) || te.Kind != TplSerialize || te.Offset != 3 || !errors.Is(err, cause) {
		t.Errorf("got %#v", err)
	}
}

// A block repeating a large value is refused at the placeholder that
// crosses the limit, having built no more than the limit; one exactly at
// the limit, or any size without a limit, renders.
func TestSubstituteMaxRefusesOversizedBlocks(t *testing.T) {
	resolve := func(Path) (string, error) { return strings.Repeat("a", 100), nil }
	block := strings.Repeat("{{ args }}", 200)
	_, err := SubstituteMax(block, resolve, 1000)
	var te *TemplateError
	if !errors.As(err, &te) || te.Kind != TplTooLarge || te.Offset != 10*len("{{ args }}") ||
		!strings.Contains(err.Error(), "the rendered block would exceed the 1000-byte string limit at {{ args }}") {
		t.Fatalf("got %v", err)
	}
	if out, err := SubstituteMax(strings.Repeat("{{ args }}", 10), resolve, 1000); err != nil || len(out) != 1000 {
		t.Fatalf("at the limit: %d bytes, %v", len(out), err)
	}
	if _, err := SubstituteMax(strings.Repeat("{{ args }}", 10)+"!", resolve, 1000); err == nil || !strings.Contains(err.Error(), "at the end of the block") {
		t.Fatalf("literal text past the limit: %v", err)
	}
	if out, err := SubstituteMax(block, resolve, 0); err != nil || len(out) != 20000 {
		t.Fatalf("no limit: %d bytes, %v", len(out), err)
	}
}

func TestSubstituteDoesNotMutateResolverErrors(t *testing.T) {
	shared := MissingKeyError(Path{Raw: "var.x"})
	resolve := func(Path) (string, error) { return "", shared }
	_, _ = Substitute("abc {{ var.x }}", resolve)
	if shared.Offset != 0 {
		t.Errorf("resolver's error was mutated: offset %d", shared.Offset)
	}
}

func TestTemplateKindNames(t *testing.T) {
	want := "Unclosed BadPath EmptySegment UnknownNamespace NotATable MissingKey NullValue NilReply NilItem Serialize TooLarge"
	var got []string
	for k := TplUnclosed; k <= TplTooLarge; k++ {
		got = append(got, k.String())
	}
	if strings.Join(got, " ") != want {
		t.Errorf("kinds %q", got)
	}
	if s := TemplateErrorKind(0).String(); s != "TemplateErrorKind(0)" {
		t.Errorf("zero kind %q", s)
	}
}

func TestPathPreviewsAreEscapedAndBounded(t *testing.T) {
	long := strings.Repeat("k", 200)
	_, err := Substitute("{{ ghost\x1b.a\nb."+long+" }}", testRun().resolve)
	var te *TemplateError
	if !errors.As(err, &te) {
		t.Fatal(err)
	}
	if strings.ContainsAny(te.Msg, "\x1b\n") {
		t.Errorf("message has raw control characters: %q", te.Msg)
	}
	if !strings.Contains(te.Msg, `ghost\u{1b}`) || !strings.Contains(te.Msg, `a\nb`) || !strings.Contains(te.Msg, "…") {
		t.Errorf("message %q lacks escapes or truncation mark", te.Msg)
	}
	if strings.Contains(te.Msg, strings.Repeat("k", 81)) {
		t.Errorf("preview not capped: %q", te.Msg)
	}

	_, err = Substitute("{{ "+long, testRun().resolve)
	if !errors.As(err, &te) || te.Kind != TplUnclosed || strings.Contains(te.Msg, strings.Repeat("k", 81)) {
		t.Errorf("unclosed preview not capped: %v", err)
	}

	if got := Preview("a\xffb\u2028"); got != `a\xffb\u{2028}` {
		t.Errorf("preview = %q", got)
	}
}

func TestParsePath(t *testing.T) {
	p, terr := ParsePath("  var.a.b ")
	if terr != nil || p.Head != "var" || strings.Join(p.Keys, ",") != "a,b" || p.Raw != "var.a.b" {
		t.Errorf("got %+v %v", p, terr)
	}
	p, terr = ParsePath("name")
	if terr != nil || p.Head != "name" || len(p.Keys) != 0 {
		t.Errorf("got %+v %v", p, terr)
	}
}
