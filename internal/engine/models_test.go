package engine

import (
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/modelset"
)

// prompt-language §8.5 Models API and inference.

var catalog = []gateway.Model{
	{ID: "m-never", Description: "General assistant model tuned for prose writing", Context: 65536, Thinking: gateway.ThinkingNever},
	{ID: "m-always", Description: "General assistant model with deep reasoning for code", Context: 8192, Thinking: gateway.ThinkingAlways},
	{ID: "m-switch", Description: "General assistant model that is fast for chat", Context: 32768, Thinking: gateway.ThinkingSwitchable},
}

func catalogCfg(g *gw) Options {
	cfg := g.cfg()
	cfg.Models = catalog
	return cfg
}

func reqModels(g *gw) []string {
	var out []string
	for _, r := range g.Requests() {
		out = append(out, r.Body["model"].(string))
	}
	return out
}

func TestModels_NeedUseAndFilters(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("one"), gatewaytest.Text("two"))
	p := parse(t, "# T\n\n"+lua(`
local w = models.need("writer", "General assistant model tuned for prose writing")
local c = models.need("coder", "General assistant model with deep reasoning for code")
store.write("h", w.model_id .. "|" .. c.name .. "|" .. c.context .. "|" .. c.dialect .. "|" .. tostring(c.thinking))`)+
		"\n## A\n\n"+lua(`models.use("coder")`)+"\nCode.\n\n## B\n\n"+lua(`models.use(writer)`)+"\nWrite.\n\n"+lua(`return store.read("h")`))
	runP(t, p, "", catalogCfg(g)).ok(t, "m-never|coder|8192|openai|nil")
	if got := strings.Join(reqModels(g), ","); got != "m-always,m-never" {
		t.Fatalf("models on the wire %s", got)
	}
	// Without use or default the section is unbound.
	p = parse(t, "# T\n\n"+lua(`models.need("writer", "General assistant model tuned for prose writing")`)+"\n## Only\n\nSpeak.\n")
	runP(t, p, "", catalogCfg(g)).fails(t, KindBinding, "model binding required for section Only")
	// Undeclared use fails loudly.
	p = parse(t, "# T\n\n## A\n\n"+lua(`models.use("ghost")`))
	runP(t, p, "", catalogCfg(g)).fails(t, KindLua, `models.use alias "ghost" was not declared by models.need`)
}

func TestModels_ConstraintFilters(t *testing.T) {
	cases := []struct{ opts, want string }{
		{`{thinking = true, context = 16000}`, "m-switch"},
		{`{thinking = false, context = 40000}`, "m-never"},
		{`{context = 60000}`, "m-never"},
		{`{context = 100000}`, "absent"},
	}
	for _, c := range cases {
		t.Run(c.opts, func(t *testing.T) {
			p := parse(t, "# T\n\n"+lua(`local ok, e = pcall(models.need, "m", "General assistant model", `+c.opts+`)
if ok then return e.model_id end
return "absent"`))
			r := runP(t, p, "", Options{Models: catalog})
			switch c.want {
			case "absent":
				r.fails(t, KindBinding, `no model matches capability "General assistant model"`)
			default:
				r.ok(t, c.want)
			}
		})
	}
	// thinking=true keeps always and switchable; false keeps never and switchable.
	for _, c := range []struct {
		thinking string
		keep     map[string]bool
	}{{"true", map[string]bool{"m-always": true, "m-switch": true}}, {"false", map[string]bool{"m-never": true, "m-switch": true}}} {
		for _, m := range catalog {
			p := parse(t, "# T\n\n"+lua(`local ok, e = pcall(models.need, "m", "`+m.Description+`", {thinking = `+c.thinking+`})
return ok and e.model_id or "absent"`))
			r := runP(t, p, "", Options{Models: catalog})
			if r.err == nil && c.keep[m.ID] && r.Value != m.ID {
				t.Errorf("thinking=%s: %s bound %q", c.thinking, m.ID, r.Value)
			}
			if !c.keep[m.ID] && r.err == nil && r.Value == m.ID {
				t.Errorf("thinking=%s kept %s", c.thinking, m.ID)
			}
		}
	}
}

func TestModels_Default(t *testing.T) {
	g := newGW(t)
	g.Respond(func(r gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Text("via " + r.Body["model"].(string))
	})
	need := `models.need("writer", "General assistant model tuned for prose writing")`
	runP(t, parse(t, "# T\n\n"+lua(need+`; models.default("writer")`)+"\n## A\n\nHi.\n"), "", catalogCfg(g)).ok(t, "via m-never")
	runP(t, parse(t, "# T\n\n"+lua(`models.default("c", "General assistant model with deep reasoning for code")`)+"\n## A\n\nHi.\n"), "", catalogCfg(g)).ok(t, "via m-always")
	cases := []struct {
		h1, want string
	}{
		{need + `; models.default("writer"); models.default("writer")`, "models.default may be called at most once per prompt"},
		{`models.default("writer")`, `models.default alias "writer" was not declared by models.need`},
		{need + `; models.default("writer", "General assistant model tuned for prose writing")`, `model alias "writer" was declared more than once`},
		{need + `; models.default("writer"); local ok = pcall(models.default, "c", "General assistant model with deep reasoning for code"); assert(not ok); models.use("c")`, "models.use is only available during H2 recording"},
	}
	for _, c := range cases {
		p := parse(t, "# T\n\n"+lua(c.h1)+"\n## A\n\n"+lua(`return 1`))
		r := runP(t, p, "", catalogCfg(g))
		if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.h1, r.err, c.want)
		}
	}
	// The multi-arg form rolled back: "c" was never declared.
	p := parse(t, "# T\n\n"+lua(need+`; models.default("writer"); pcall(models.default, "c", "General assistant model with deep reasoning for code")`)+"\n## A\n\n"+lua(`models.get("c")`))
	runP(t, p, "", catalogCfg(g)).fails(t, KindLua, `models.get alias "c" was not declared by models.need`)
	p = parse(t, "# T\n\n"+lua(need)+"\n## A\n\n"+lua(`models.default("writer")`))
	runP(t, p, "", catalogCfg(g)).fails(t, KindLua, "models.default is only available during live H1 execution")
}

func TestModels_GetAndInfer(t *testing.T) {
	g := newGW(t)
	g.Respond(func(r gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Text("[" + r.Body["model"].(string) + ":" + r.Messages[0]["content"].(string) + "]")
	})
	h1 := "# T\n\n" + lua(`models.need("writer", "General assistant model tuned for prose writing")
models.default("chat", "General assistant model that is fast for chat")`)
	var debug []DebugTurn
	cfg := catalogCfg(g)
	cfg.Debug = func(d DebugTurn) { debug = append(debug, d) }
	p := parse(t, h1+"\n## A\n\n"+lua(`
local w = models.get("writer")
local a = w:infer("hello")
local b = models.infer("hi")
assert(reply == nil)
assert(not pcall(function() return sys.reply_finish_reason end))
return a .. b .. models.get("writer"):infer("x")`))
	r := runP(t, p, "", cfg)
	r.ok(t, "[m-never:hello][m-switch:hi][m-never:x]")
	if r.Turns != 3 || r.rec.count(ModelTurnCompleted) != 3 || len(debug) != 3 || len(debug[0].Request) == 0 || len(debug[0].Response) == 0 {
		t.Fatalf("turns %d observed %d debug %d", r.Turns, r.rec.count(ModelTurnCompleted), len(debug))
	}
	// No section model: models.infer fails, a handle still works.
	p = parse(t, "# T\n\n"+lua(`models.need("writer", "General assistant model tuned for prose writing")`)+"\n## Only\n\n"+
		lua(`local got = models.get("writer"):infer("x"); local ok, e = pcall(models.infer, "y"); assert(not ok); return got .. tostring(e)`))
	runP(t, p, "", catalogCfg(g)).ok(t, "[m-never:x]model binding required for section Only")
	p = parse(t, "# T\n\n"+lua(`models.need("writer", "General assistant model tuned for prose writing")`)+"\n## Only\n\n"+lua(`return models.infer("y")`))
	runP(t, p, "", catalogCfg(g)).fails(t, KindBinding, "model binding required for section Only")
	// Per-call options are refused.
	p = parse(t, h1+"\n## A\n\n"+lua(`return writer:infer("x", {temperature = 1})`))
	runP(t, p, "", catalogCfg(g)).fails(t, KindLua, "per-call options are not supported")
	// models.use at most once per section.
	p = parse(t, h1+"\n## A\n\n"+lua(`models.use("writer")`)+"\nHi.\n\n"+lua(`models.use("chat")`))
	runP(t, p, "", catalogCfg(g)).fails(t, KindLua, "models.use may be called at most once per section")
}

func TestModels_InferToolCallReply(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "x"}))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`return models.infer("x")`))
	runP(t, p, "", g.cfg()).fails(t, KindCompletion, "model inference received tool calls but no tools were advertised")
}

func TestModels_H1(t *testing.T) {
	g := newGW(t)
	g.Respond(func(r gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Text("re:" + r.Messages[len(r.Messages)-1]["content"].(string))
	})
	p := parse(t, "# T\n\n"+lua(`local w = models.default("writer", "General assistant model")
store.write("inferred", w:infer("once") .. "|" .. models.infer("default") .. "|" .. sys.id)`)+
		"\nH1 prose {{ args }}.\n\n## A\n\n"+lua(`assert(reply == nil); store.write("id", sys.id)`)+"\nSection prose.\n")
	r := runP(t, p, "x", g.cfg())
	r.ok(t, "re:Section prose.")
	if got, _ := r.st.Read("inferred", storeAll); got != "re:once|re:default|0" {
		t.Fatalf("h1 infer %q", got)
	}
	if got, _ := r.st.Read("id", storeAll); got != "1" {
		t.Fatalf("first section id %q", got)
	}
	var prose []string
	for _, req := range g.Requests() {
		prose = append(prose, req.Messages[len(req.Messages)-1]["content"].(string))
	}
	if got := strings.Join(prose, "|"); got != "once|default|H1 prose x.|Section prose." {
		t.Fatalf("completions in order: %s", got)
	}
	// H1 prose that substitutes to nothing needs no model; otherwise it does.
	runP(t, parse(t, "# T\n\n"+lua(`empty = ""`)+"\n{{ empty }}\n\n## A\n\n"+lua(`return "fine"`)), "", Options{}).ok(t, "fine")
	runP(t, parse(t, "# T\n\nDescribes the prompt.\n\n## A\n\n"+lua(`return "x"`)), "", Options{}).fails(t, KindBinding, "model binding required for section T")
	// H1-only prompt: the last H1 reply is the result.
	g2 := newGW(t)
	g2.Enqueue(gatewaytest.Text("h1 answer"))
	runP(t, parse(t, "# T\n\n"+defaultModel+"\nOnly H1.\n"), "", g2.cfg()).ok(t, "h1 answer")
	// H1 prose keeps single-shot for non-final blocks and loops for the last.
	g3 := newGW(t)
	g3.Enqueue(callSearch("1"), callSearch("2"), gatewaytest.Text("done"))
	cfg := g3.cfg()
	cfg.Tools = bothTools()
	p = parse(t, "# T\n\n"+lua(`tools.need("search", "`+searchNeed+`"); tools.always("search")
models.default("w", "A general assistant model")`)+"\nFirst.\n\n"+lua(`store.write("mid", tostring(reply))`)+"\nSecond.\n")
	r = runP(t, p, "", cfg)
	r.ok(t, "done")
	if got, _ := r.st.Read("mid", storeAll); got != "nil" || len(g3.Requests()) != 3 {
		t.Fatalf("mid %q requests %d", got, len(g3.Requests()))
	}
}

// A need that binds nothing names the [models] tables no served id
// matches, since a wrong tag is the likeliest cause (issue 10 item 3): the
// server lists llama3.1:latest with no description, and the table that
// would describe it says llama3.1:8b.
func TestModelNeedNamesUnmatchedTables(t *testing.T) {
	set := modelset.StaticCatalog("http://127.0.0.1:11434/v1", gateway.Catalog{
		Skipped:   []gateway.SkippedModel{{ID: "llama3.1:latest", Reason: "no description"}},
		Unmatched: []gateway.UnmatchedOverride{{ID: "llama3.1:8b", Closest: "llama3.1:latest"}},
	})
	p := parse(t, "# T\n\n"+lua(`models.need("m", "General assistant model")`))
	r := runP(t, p, "", Options{ModelSet: set})
	r.fails(t, KindBinding, `lists 1 model(s) but none can be bound: llama3.1:latest: no description; no served model is "llama3.1:8b"; the server lists "llama3.1:latest": rename the table to [models."llama3.1:latest"]`)
}
