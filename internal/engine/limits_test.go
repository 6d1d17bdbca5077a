package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/luavm"
)

// Per-VM limits through Run (prompt-language §2.1, §3.10): long library
// calls, var growth, and what the Lua API accepts as a table.

// backtracking is a pattern search that runs for minutes in gopher-lua's
// own matcher, as one Go call nothing could interrupt.
const backtracking = `string.find(string.rep("a", 3000), ".-.-.-b")`

func TestLimits_BacktrackingPatternEndsAtTheBudget(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`return tostring(`+backtracking+`)`))
	runP(t, p, "", Options{Limits: Limits{Limits: luavm.Limits{LuaTime: 50 * time.Millisecond}}}).fails(t, KindQuota, "lua time quota exceeded")
}

func TestLimits_BacktrackingPatternStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	started := make(chan struct{})
	cfg := Options{
		Limits: Limits{Limits: luavm.Limits{LuaTime: time.Hour}}, // only the cancellation can stop it
		Observer: ObserverFunc(func(e Event) {
			if e.Detail == DetailLua {
				close(started)
			}
		}),
	}
	done := make(chan error, 1)
	go func() {
		_, err := runCtx(ctx, t, "# T\n\n## A\n\n"+lua(`log("matching") return `+backtracking), cfg)
		done <- err
	}()
	<-started
	cancel(errors.New("the caller cancelled the call"))
	wantCancelled(t, <-done, "the caller cancelled the call")
}

// Escaping a fetched page is an everyday idiom; gopher-lua's gsub was
// quadratic in it (over 2 s for 40 KB, past this budget, where the linear
// one needs about a tenth of a second even under the race detector).
func TestLimits_GsubEscapesALargePage(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`local page = string.rep("a<", 20000)
local escaped, n = page:gsub("<", "&lt;")
return #escaped .. " " .. n`))
	runP(t, p, "", Options{Limits: Limits{Limits: luavm.Limits{LuaTime: time.Second}}}).ok(t, "100000 20000")
}

func TestLimits_LibraryStringsAreBounded(t *testing.T) {
	lim := Options{Limits: Limits{Limits: luavm.Limits{MaxStringBytes: 1000}}}
	for src, want := range map[string]string{
		`return (string.gsub(string.rep("a", 600), "a", "bb"))`:                               "string.gsub result would exceed the 1000-byte string limit",
		`local s = string.rep("x", 600) return string.format("%s%s", s, s)`:                   "string.format result would exceed the 1000-byte string limit",
		`local s = string.rep("x", 700) s = s .. s`:                                           "string concatenation result would exceed the 1000-byte string limit",
		`local t = {} for i = 1, 100 do t[i] = "0123456789abcdef" end return table.concat(t)`: "table.concat result would exceed the 1000-byte string limit",
	} {
		runP(t, parse(t, "# T\n\n## A\n\n"+lua(src)), "", lim).fails(t, KindLua, want)
	}
	byteSrc := `local s = string.rep("x", 70000) return #{string.byte(s, 1, -1)}`
	runP(t, parse(t, "# T\n\n## A\n\n"+lua(byteSrc)), "", Options{}).fails(t, KindLua, "string.byte would return 70000 values")
}

func TestLimits_VarGrowthIsBounded(t *testing.T) {
	// Each var.k = var used to double var: 417 MB after 20 rounds.
	p := parse(t, "# T\n\n## A\n\n"+lua(`var.a = {1}`)+"\n## B\n\n"+lua(`for i = 1, 40 do var["k" .. i] = var end`))
	r := runP(t, p, "", Options{Limits: Limits{Limits: luavm.Limits{MaxVarBytes: 1 << 20}}})
	e := r.fails(t, KindLua, "the assignment would grow var past its 1048576-byte limit")
	if !strings.Contains(e.Error(), "section `B` prologue:") || !strings.Contains(e.Error(), ": var.k") {
		t.Fatalf("the error does not point at the assignment: %v", e)
	}
}

// prompt-language §2.4: replacing var is detected when the host next reads
// it, and a prose block reads it before anything is sent, whether or not its
// text names var.
func TestLimits_VarReassignedFailsBeforeTheModelCall(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("must not be used"))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`var = {}`)+"\nHello.\n")
	runP(t, p, "", g.cfg()).fails(t, KindLua, "the `var` global was reassigned; write `var.<field>` instead")
	if n := len(g.Requests()); n != 0 {
		t.Fatalf("%d model calls before the failure", n)
	}
}

// type() calls var data a table, so every API that takes a table takes it.
func TestLimits_VarDataWhereTablesAreExpected(t *testing.T) {
	g := newGW(t)
	g.Respond(func(req gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Text("R(" + lastUser(req) + ")")
	})
	cfg := g.cfg()
	cfg.Tools = bothTools()
	p := parse(t, "# T\n\n"+lua(`var.o = {max_tokens = 50}
tools.need("search", "`+searchNeed+`")
tools.need("fetch", "`+fetchNeed+`")
models.default("writer", "A general assistant model", var.o)`)+
		"\n## Main\n\n"+lua(`var.ts = {"search", "fetch"}
tools.add(var.ts)
var.p = {text = "string"}
tools.add_local("shout", "Upper-case text", var.p, function(a) return a.text:upper() end)`)+
		"\nGo.\n\n"+lua(`var.items = {"a", "b"}
return table.concat(fanout("## W", var.items), ",")`)+
		"\n## W\n\n---\n\nSay {{ item }}.\n")
	runP(t, p, "", cfg).ok(t, "R(Say a.),R(Say b.)")
	first := g.Requests()[0]
	if got := strings.Join(toolNames(first), ","); got != "search,fetch,shout" {
		t.Fatalf("advertised %q", got)
	}
	if first.Body["max_tokens"] != float64(50) {
		t.Fatalf("opts from var did not reach the wire: %v", first.Body["max_tokens"])
	}
}

// B8: a handler that captured jump cannot leave its section; the refusal
// is an error in the handler (so the tool call fails), not a silently
// dropped jump.
func TestLimits_CapturedJumpInLocalToolIsRefused(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "hop"}), gatewaytest.Text("stayed"))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`local j = jump
tools.add_local("hop", "hop", {}, function() local ok, err = pcall(j, "## B") return tostring(ok) .. ": " .. err end)`)+
		"\nGo.\n\n"+lua(`return "A ended: " .. reply`)+"\n## B\n\n"+lua(`return "jumped"`))
	runP(t, p, "", g.cfg()).ok(t, "A ended: stayed")
	m := g.Requests()[1].Messages
	if got, _ := m[len(m)-1]["content"].(string); !strings.HasPrefix(got, "false: ") || !strings.Contains(got, "jump is not available inside a local tool handler") {
		t.Fatalf("handler result %q", got)
	}
	// Uncaught, the refusal fails the tool call and the run.
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "hop"}))
	p = parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`local j = jump
tools.add_local("hop", "hop", {}, function() j("## B") end)`)+"\nGo.\n\n## B\n\n"+lua(`return "jumped"`))
	runP(t, p, "", g.cfg()).fails(t, KindTool, "jump is not available inside a local tool handler")
}
