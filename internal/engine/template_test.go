package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
)

// prompt-language §8.2 Templating: the runtime side (value resolution in a
// section VM).

func TestTemplate_Resolution(t *testing.T) {
	g := newGW(t)
	g.Respond(func(r gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("ok") })
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`reply = "prev"
var.x = "vx"; var.obj = {k = {1, 2}, n = 2.0}
scalar = 42; tbl = {a = {b = "deep"}, list = {"p", "q"}}; flag = true`)+
		"\nargs={{ args }} reply={{ reply }} var={{ var.x }} obj={{ var.obj }} sys={{ sys.section_name }} g={{ scalar }} d={{ tbl.a.b }} t={{ tbl }} f={{ flag }} esc=\\{{ args \\}} lit={{ lit }}\n")
	cfg := g.cfg()
	// lit is not defined: the run fails with a positioned template error.
	r := runP(t, p, "A", cfg)
	if r.err == nil || !strings.Contains(r.err.Error(), "unknown namespace or global 'lit'") {
		t.Fatalf("unknown global: %v", r.err)
	}
	var te *prompt.TemplateError
	if !errors.As(r.err, &te) || te.Kind != prompt.TplUnknownNamespace || te.Offset == 0 {
		t.Fatalf("template error detail: %#v", r.err)
	}
	p = parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`reply = "prev"
var.x = "vx"; var.obj = {k = {1, 2}, n = 2.0}
scalar = 42; tbl = {a = {b = "deep"}, list = {"p", "q"}}; flag = true; lit = "{{ args }}"`)+
		"\nargs={{ args }} reply={{ reply }} var={{ var.x }} obj={{ var.obj }} sys={{ sys.section_name }} g={{ scalar }} d={{ tbl.a.b }} t={{ tbl }} f={{ flag }} esc=\\{{ args \\}} lit={{ lit }}\n")
	runP(t, p, "A", cfg).ok(t, "ok")
	reqs := g.Requests()
	got := reqs[len(reqs)-1].Messages[0]["content"]
	want := `args=A reply=prev var=vx obj={"k":[1,2],"n":2} sys=A g=42 d=deep t={"a":{"b":"deep"},"list":["p","q"]} f=true esc={{ args }} lit={{ args }}`
	if got != want {
		t.Fatalf("substituted:\n%s\nwant:\n%s", got, want)
	}
}

func TestTemplate_Errors(t *testing.T) {
	cases := []struct{ setup, tpl, want string }{
		{``, `{{ reply }}`, "{{ reply }} is nil (no prior section reply)"},
		{``, `{{ item }}`, "{{ item }} is nil (not inside a fanout arm)"},
		{``, `{{ ghost }}`, "unknown namespace or global 'ghost'"},
		{`f = function() end`, `{{ f }}`, "is not JSON data"},
		{`var.a = {}`, `{{ var.a.missing }}`, "missing {{ var.a.missing }}"},
		{``, `{{ var.nope }}`, "missing {{ var.nope }}"},
		{``, `{{ var }}`, "bad path"},
		{``, `{{ args.x }}`, "args is a string, not a table"},
		{``, `{{ var..x }}`, "empty segment"},
		{``, `{{ args`, "unclosed"},
	}
	for _, c := range cases {
		t.Run(c.tpl, func(t *testing.T) {
			p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua("local _ = 1\n"+c.setup)+"\nText "+c.tpl+"\n")
			runP(t, p, "", Options{Models: []gateway.Model{testModel}}).fails(t, KindSubstitution, c.want)
		})
	}
}

// prompt-language §2.1: typed arguments reach Lua (params) and templates
// ({{ params.NAME }}) in every VM of the run, H1 and sections alike.
func TestParams_LuaAndTemplates(t *testing.T) {
	g := newGW(t)
	g.Respond(func(r gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("ok") })
	p := parse(t, "# T\n\n"+defaultModel+lua(`var.h1 = params.topic .. "/" .. params.count`)+
		"\n## A\n\n"+lua(`var.sum = params.count + 1; var.kind = type(params.loud)`)+
		"\ntopic={{ params.topic }} count={{ params.count }} loud={{ params.loud }} all={{ params }} h1={{ var.h1 }} sum={{ var.sum }} kind={{ var.kind }} args={{ args }}\n")
	cfg := g.cfg()
	cfg.Params = map[string]any{"topic": "go", "count": float64(3), "loud": false}
	runP(t, p, `{"count":3,"loud":false,"topic":"go"}`, cfg).ok(t, "ok")
	reqs := g.Requests()
	got := reqs[len(reqs)-1].Messages[0]["content"]
	want := `topic=go count=3 loud=false all={"count":3,"loud":false,"topic":"go"} h1=go/3 sum=4 kind=boolean args={"count":3,"loud":false,"topic":"go"}`
	if got != want {
		t.Fatalf("substituted:\n%s\nwant:\n%s", got, want)
	}
}

// Without typed arguments there is no params global: the prompt sees
// exactly what it always has.
func TestParams_AbsentWithoutArguments(t *testing.T) {
	p := parse(t, "# T\n\n"+lua(`return tostring(params)`)+"\n")
	runP(t, p, "x", Options{}).ok(t, "nil")
}
