package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
)

// soon is a SpeculateUntil that no test reaches: the attempts below stop
// at what they do, not at the clock.
func soon() time.Time { return time.Now().Add(time.Hour) }

func mustStop(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrSpeculationStopped) {
		t.Fatalf("run ended with %v, want the speculation stop", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindCancelled {
		t.Fatalf("the stop is %T %v, want an *Error of kind cancelled", err, err)
	}
}

// speculateFromSections runs p as a speculative attempt from its first
// section on: its H1 binds models and tools as an ordinary run does, so
// that a section's turn or model call has what it needs to reach the
// gateway, had the attempt not stopped it. (An attempt from the start
// would stop at the H1's models.need, first.)
func speculateFromSections(t *testing.T, p *prompt.Prompt, cfg Options) (Result, error) {
	t.Helper()
	var r *run
	cfg.Observer = ObserverFunc(func(e Event) {
		if e.Detail == SectionStarted && r.cfg.SpeculateUntil.IsZero() {
			r.cfg.SpeculateUntil = soon()
		}
	})
	r, err := newRun(p, "", store.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.execute(context.Background())
	if err != nil {
		err = finalError(context.Background(), err) // as Run does
	}
	return Result{Value: v}, err
}

const writer = "```lua\nmodels.need(\"writer\", \"A general assistant model\")\nmodels.default(\"writer\")\n```\n"

// A section's model turn, models.infer, handle:infer, fanout and a chain's
// turn stop the attempt before any request reaches the gateway, pcall or
// not; the same prompt run ordinarily sends one.
func TestSpeculation_StopsBeforeTheGateway(t *testing.T) {
	for name, body := range map[string]string{
		"prose turn":     "Say hi.\n",
		"models.infer":   lua(`models.infer("hi") return "reached"`),
		"handle:infer":   lua(`models.get("writer"):infer("hi") return "reached"`),
		"pcall(infer)":   lua(`pcall(models.infer, "hi") return "reached"`),
		"fanout":         lua(`fanout("## W", {1}) return "reached"`) + "\n## W\n\n---\n\nSay {{ item }}.\n",
		"execute a turn": lua(`pcall(execute, "## W") return "reached"`) + "\n## W\n\n---\n\nSay hi.\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := parse(t, "# T\n\n"+writer+"\n## A\n\n"+body)
			control := newGW(t)
			control.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("hi") })
			if _, err := Run(context.Background(), p, "", nil, control.cfg()); err != nil || len(control.Requests()) == 0 {
				t.Fatalf("the ordinary run sent %d requests (%v): the case tests nothing", len(control.Requests()), err)
			}
			g := newGW(t)
			g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("hi") })
			_, err := speculateFromSections(t, p, g.cfg())
			mustStop(t, err)
			if n := len(g.Requests()); n != 0 {
				t.Fatalf("%d requests reached the gateway", n)
			}
		})
	}
}

// The H1's live bindings stop an attempt before they bind: no tool or
// model is resolved, nothing runs after them.
func TestSpeculation_StopsAtLiveBindings(t *testing.T) {
	for _, src := range []string{
		`models.need("writer", "A general assistant model")`,
		`models.default("writer", "A general assistant model")`,
		`tools.need("search", "Search the web")`,
		`pcall(tools.need, "search", "Search the web")`,
	} {
		t.Run(src, func(t *testing.T) {
			g := newGW(t)
			cfg := g.cfg()
			search := searchTool()
			cfg.Tools = append(cfg.Tools, search)
			p := parse(t, "# T\n\n"+lua(src+` store.write("after", "ran")`)+"\n## A\n\n"+lua(`return "reached"`))
			runP(t, p, "", cfg).ok(t, "reached") // the ordinary run, for contrast
			cfg.SpeculateUntil = soon()
			r := runP(t, p, "", cfg)
			mustStop(t, r.err)
			if names, _ := r.st.Glob("*"); len(names) != 0 || len(g.Requests())+g.ModelsCalls() != 0 || len(search.calls) != 0 {
				t.Fatalf("the attempt went on: files %v, %d requests, %d tool calls", names, len(g.Requests())+g.ModelsCalls(), len(search.calls))
			}
		})
	}
}

// A Lua-only prompt runs to the same result as an attempt as ordinarily,
// execute (inline) included.
func TestSpeculation_LuaOnlyCompletes(t *testing.T) {
	p := parse(t, "# T\n\n"+lua(`var.seen = {"h1"}`)+
		"```lua shared\nfunction twice(s) return s .. s end\n```\n"+
		"\n## A\n\n"+lua(`var.seen[#var.seen+1] = "a"; reply = twice(args) .. "|" .. execute("## Sub", "in"); store.write("f", reply)`)+
		"\n## B\n\n"+lua(`local t = {} for i = 1, 30000 do t[i] = i % 10 end
return reply .. "|" .. #table.concat(t):gsub("[0-4]", "") .. "|" .. #var.seen .. "|" .. store.read("f")`)+
		"\n## Sub\n\n---\n\n"+lua(`return "sub saw " .. args`))
	ordinary := runP(t, p, "x", Options{})
	ordinary.ok(t, "xx|sub saw in|15000|2|xx|sub saw in")
	runP(t, p, "x", Options{SpeculateUntil: soon()}).ok(t, ordinary.Value)
}

// A jump loop of sections that each run a few instructions never reaches
// the meter's clock check: the sections' own checks stop it.
func TestSpeculation_JumpLoopStopsPastDeadline(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`var.n = (var.n or 0) + 1 if var.n > 2000 then return "looped" end jump("## B")`)+
		"\n## B\n\n"+lua(`jump("## A")`))
	runP(t, p, "", Options{}).ok(t, "looped") // ordinary, for contrast
	r := runP(t, p, "", Options{SpeculateUntil: time.Now().Add(-time.Second)})
	mustStop(t, r.err)
	if n := r.rec.count(LuaChunkSucceeded); n != 0 {
		t.Fatalf("%d chunks ran past the deadline", n)
	}
}
