package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// prompt-language §8.7 Fanout, plus the arm lines of §8.3, §8.6 and §8.10.

// fanoutPrompt is a caller section Main running callerLua, and an off-walk
// worker W running workerBody.
func fanoutPrompt(t testing.TB, h1, callerLua, workerBody string) *prompt.Prompt {
	t.Helper()
	return parse(t, "# T\n\n"+h1+"\n## Main\n\n"+lua(callerLua)+"\n## W\n\n---\n\n"+workerBody)
}

// sectionEvents are the details observed under one section name.
func (r *recorder) sectionEvents(section string) []Detail {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Detail
	for _, e := range r.events {
		if e.Section == section {
			out = append(out, e.Detail)
		}
	}
	return out
}

// lastUser is the content of the last user message of a chat request.
func lastUser(req gatewaytest.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i]["role"] == "user" {
			s, _ := req.Messages[i]["content"].(string)
			return s
		}
	}
	return ""
}

// echo answers every chat request with "R(<last user message>)", so
// concurrent arms get deterministic replies whatever order they arrive in.
func echo(req gatewaytest.Request) gatewaytest.Reply {
	return gatewaytest.Text("R(" + lastUser(req) + ")")
}

func TestFanout_PrologueReturnWorker(t *testing.T) {
	p := fanoutPrompt(t, "", `local r = fanout("## W", {"alpha", "beta"}); return table.concat(r, "\n")`,
		lua(`return item .. "-" .. sys.index`))
	r := runP(t, p, "", Options{})
	r.ok(t, "alpha-1\nbeta-2")
	got := r.rec.sectionEvents("W")
	started, succeeded := 0, 0
	for _, d := range got {
		switch d {
		case FanoutArmStarted:
			started++
		case FanoutArmSucceeded:
			succeeded++
		default:
			t.Fatalf("unexpected %v under the worker name; events %v", d, got)
		}
	}
	if started != 2 || succeeded != 2 {
		t.Fatalf("worker events %v, want two started and two succeeded", got)
	}
}

func TestFanout_FromEpilogAfterEmptyProse(t *testing.T) {
	p := parse(t, "# T\n\n## Main\n\n"+lua(`local x = 1`)+lua(`
local r = fanout("## W", {"x", "y"})
return table.concat(r, ",")`)+"\n## W\n\n---\n\n"+lua(`return item .. "-" .. sys.index`))
	runP(t, p, "", Options{}).ok(t, "x-1,y-2")
}

func TestFanout_ArmsRunConcurrentlyAndShareTheStore(t *testing.T) {
	// Each arm announces itself, then waits until the other has too: run
	// one after the other, the first arm would spin until its time budget
	// ran out.
	p := fanoutPrompt(t, "", `local r = fanout("## W", {"alpha", "beta"}); return #r .. ":" .. table.concat(r, ",")`,
		lua(`store.write("ready/" .. item, "yes")
while #store.glob("ready/*") < 2 do end
return item`))
	runP(t, p, "", Options{}).ok(t, "2:alpha,beta")
}

func TestFanout_RaisingArmFailsTheRunAndAbortsSiblings(t *testing.T) {
	g := newGW(t)
	gate := gatewaytest.NewGate()
	defer gate.Release()
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Gated(gate, gatewaytest.Text("never")) })
	// The slow arm is held at the gateway; the bad arm raises.
	p := fanoutPrompt(t, defaultModel, `fanout("## W", {"slow", "bad"}); return "unreachable"`,
		lua(`if item == "bad" then error("arm broke on " .. item) end`)+"\nWork on {{ item }}.\n")
	r := runP(t, p, "", g.cfg())
	r.fails(t, KindLua, "arm broke on bad")
	if r.rec.count(FanoutArmStarted) != 2 || r.rec.count(FanoutArmFailed) != 1 ||
		r.rec.count(FanoutArmCancelled) != 1 || r.rec.count(FanoutArmSucceeded) != 0 {
		t.Fatalf("arm events %v", r.rec.sectionEvents("W"))
	}
}

func TestFanout_ResultObjects(t *testing.T) {
	// The first arm finishes last: results still follow the collection.
	p := fanoutPrompt(t, "", `
local r = fanout("## W", {"first", "second"})
local parts = {}
for i, res in ipairs(r) do
  parts[#parts + 1] = res.text .. "/" .. tostring(res.ok) .. "/" .. res.item .. "/" .. tostring(res.exhausted)
end
return table.concat(parts, ";") .. "|" .. tostring(r[1]) .. "|" .. table.concat(r, "+") .. "|" .. store.read("order")`,
		lua(`if item == "first" then
  while not store.exists("second done") do end
end
store.append("order", item .. ";")
if item == "second" then store.write("second done", "") end
return "T:" .. item`))
	runP(t, p, "", Options{}).ok(t,
		"T:first/true/first/false;T:second/true/second/false|T:first|T:first+T:second|second;first;")
	// Results are read-only.
	p = fanoutPrompt(t, "", `local r = fanout("## W", {"a"}); r[1].text = "x"`, lua(`return item`))
	runP(t, p, "", Options{}).fails(t, KindLua, "fanout results are read-only")
}

func TestFanout_ExhaustedArmIsSoft(t *testing.T) {
	g := newGW(t)
	g.Respond(func(req gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Calls(gatewaytest.Call{Name: "probe", Args: map[string]any{}})
	})
	p := parse(t, "---\nname: t\ndescription: d\npromptforge: 1\nmax_tool_iterations: 2\n---\n# T\n\n"+defaultModel+
		"\n## Main\n\n"+lua(`
local r = fanout("## W", {"lost"})
local x = r[1]
return tostring(x.ok) .. "|" .. tostring(x.exhausted) .. "|" .. x.item .. "|" .. x.text`)+
		"\n## W\n\n---\n\n"+lua(`tools.add_local("probe", "probe", {}, function() return "again" end)`)+"\nLook into {{ item }}.\n")
	r := runP(t, p, "", g.cfg())
	r.ok(t, "false|true|lost|## lost\n\nUNKNOWN\n\n(section incomplete: tool loop exhausted)")
	if r.rec.count(FanoutArmExhausted) != 1 || r.rec.count(FanoutArmSucceeded) != 0 || r.rec.count(FanoutArmFailed) != 0 {
		t.Fatalf("arm events %v", r.rec.sectionEvents("W"))
	}
	if r.Turns != 2 {
		t.Fatalf("turns %d, want the arm's 2", r.Turns)
	}
	// A table item renders as compact JSON in the exhausted text.
	p = parse(t, "---\nname: t\ndescription: d\npromptforge: 1\nmax_tool_iterations: 1\n---\n# T\n\n"+defaultModel+
		"\n## Main\n\n"+lua(`return fanout("## W", {{k = 1}})[1].text`)+
		"\n## W\n\n---\n\n"+lua(`tools.add_local("probe", "probe", {}, function() return "again" end)`)+"\nGo.\n")
	runP(t, p, "", g.cfg()).ok(t, "## {\"k\":1}\n\nUNKNOWN\n\n(section incomplete: tool loop exhausted)")
}

func TestFanout_MemberTypes(t *testing.T) {
	p := fanoutPrompt(t, "", `
local r = fanout("## W", {"b", 2, true, {name = "x"}})
return table.concat(r, ",") .. "|" .. r[4].item.name .. "|" .. type(r[2].item)`,
		lua(`if type(item) == "table" then return "table:" .. item.name end
return type(item) .. ":" .. tostring(item)`))
	runP(t, p, "", Options{}).ok(t, "string:b,number:2,boolean:true,table:x|x|number")
	// Hash members arrive as {key, value} pairs after the array part.
	p = fanoutPrompt(t, "", `
local r = fanout("## W", {"first", colour = "red"})
return table.concat(r, ",") .. "|" .. r[2].item.key .. "=" .. r[2].item.value`,
		lua(`if type(item) == "table" then return item.key .. ":" .. item.value end
return item`))
	runP(t, p, "", Options{}).ok(t, "first,colour:red|colour=red")
}

func TestFanout_CallSiteErrors(t *testing.T) {
	rest := "\n## W\n\n---\n\n" + lua(`return item`) +
		"\n## L\n\n---\n\n- one\n- two\n" +
		"\n## Other\n\n---\n\n" + lua(`return 1`) + "\n### Niece\n\n" + lua(`return 1`)
	cases := []struct{ name, caller, want string }{
		{"empty collection", `fanout("## W", {})`, "fanout over an empty collection: no work is likely a bug"},
		{"heading as collection", `fanout("## W", "## L")`, "fanout's second parameter is a collection; for a list section use list_from_section(heading)"},
		{"number as collection", `fanout("## W", 3)`, "fanout's second parameter is a collection"},
		{"boolean as collection", `fanout("## W", true)`, "fanout's second parameter is a collection"},
		{"function member", `fanout("## W", {"a", function() end})`, "fanout collection member at index 2 is a function; members must be data"},
		{"hash function member", `fanout("## W", {f = function() end})`, "fanout collection member at index f is a function; members must be data"},
		{"table key", `fanout("## W", {[{}] = 1})`, "fanout collection key must be a string, number, or boolean, got table"},
		{"list section worker", `fanout("## L", {"a"})`, "section `L` is a list section, not a worker template"},
		{"niece worker", `fanout("### Niece", {"a"})`, "section heading `### Niece` not found; available sections: ## W, ## L, ## Other"},
		{"self worker", `fanout("## Main", {"a"})`, "section heading `## Main` not found"},
		{"non-string worker", `fanout(1, {"a"})`, "section target must be a string, got number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, "# T\n\n## Main\n\n"+lua(c.caller)+rest)
			r := runP(t, p, "", Options{})
			r.fails(t, KindLua, c.want)
			if n := r.rec.count(FanoutArmStarted); n != 0 {
				t.Fatalf("%d arms started", n)
			}
		})
	}
}

func TestFanout_WorkerSharedBySiblingCallers(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`store.write("a", fanout("## W", {"from A"})[1].text)`)+
		"\n## B\n\n"+lua(`return store.read("a") .. "|" .. fanout("## W", {"from B"})[1].text`)+
		"\n## W\n\n---\n\n"+lua(`return "W " .. item`))
	runP(t, p, "", Options{}).ok(t, "W from A|W from B")
}

// window tracks how many arms are between started and their terminal
// event.
type window struct {
	mu             sync.Mutex
	active, max, n int
}

func (w *window) Observe(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e.Detail {
	case FanoutArmStarted:
		w.active++
		w.n++
		w.max = max(w.max, w.active)
	case FanoutArmSucceeded, FanoutArmExhausted, FanoutArmFailed, FanoutArmCancelled:
		w.active--
	}
}

func TestFanout_NoItemCapAndBoundedWindow(t *testing.T) {
	p := fanoutPrompt(t, "", `
local list = {}
for i = 1, 1025 do list[i] = i end
local r = fanout("## W", list)
local sum = 0
for _, x in ipairs(r) do sum = sum + tonumber(x.text) end
return #r .. ":" .. sum`, lua(`return item * 2`))
	for _, limit := range []int{0, 3} {
		w := &window{}
		cfg := Options{Observer: w, Limits: Limits{FanoutConcurrency: limit}}
		runP(t, p, "", cfg).ok(t, "1025:1051650")
		want := limit
		if want == 0 {
			want = DefaultFanoutConcurrency
		}
		if w.n != 1025 || w.max > want || w.active != 0 {
			t.Fatalf("limit %d: %d arms, window max %d, still active %d", limit, w.n, w.max, w.active)
		}
	}
}

func TestFanout_WriteRaces(t *testing.T) {
	t.Run("two arms write one path", func(t *testing.T) {
		p := fanoutPrompt(t, "", `fanout("## W", {"a", "b"})`, lua(`store.write("same", item)`))
		runP(t, p, "", Options{}).fails(t, KindLua, "write-write race on same: another arm of the same fanout already wrote it")
	})
	t.Run("the race is fatal even when caught", func(t *testing.T) {
		p := fanoutPrompt(t, "", `fanout("## W", {"a", "b"}); return "caught"`, lua(`pcall(store.write, "same", item)`))
		runP(t, p, "", Options{}).fails(t, KindLua, "write-write race on same")
	})
	t.Run("appends, own rewrites, chains and later fanouts are fine", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`
fanout("## W", {"a", "b"})
fanout("## W", {"c"})
fanout("## W", {"d"})
local log = store.read("log")
store.write("summary", #log .. "|" .. store.read("own/a") .. store.read("own/b") .. "|" .. store.read("shared") .. "|" .. store.read("chained"))`)+
			"\n## W\n\n---\n\n"+lua(`
store.append("log", item .. ";")
store.write("own/" .. item, "1")
store.write("own/" .. item, "2")
if item == "c" or item == "d" then store.write("shared", item) end
execute("## Chain")`)+
			"\n## Chain\n\n---\n\n"+lua(`store.write("chained", "yes") return ""`)+
			"\n## After\n\n"+lua(`store.write("shared", "walk") return store.read("summary")`))
		r := runP(t, p, "", Options{})
		r.ok(t, "8|22|d|yes")
		if s, _ := r.st.Read("shared", storeAll); s != "walk" {
			t.Fatalf("shared = %q after the walk wrote it", s)
		}
	})
}

func TestFanout_ArmsTalkToTheModel(t *testing.T) {
	t.Run("model required", func(t *testing.T) {
		p := fanoutPrompt(t, "", `fanout("## W", {"a"})`, "Say {{ item }}.\n")
		runP(t, p, "", Options{}).fails(t, KindBinding, "model binding required for section W")
	})
	t.Run("prose blocks roll the reply forward", func(t *testing.T) {
		g := newGW(t)
		g.Respond(echo)
		p := parse(t, "# T\n\n"+lua(`tools.need("search", "Search the web and return a list of results (title, url, description).")`+"\n"+
			`models.default("writer", "A general assistant model")`)+
			"\n## Main\n\n"+lua(`return table.concat(fanout("## W", {"a", "b"}), ",")`)+
			"\n## W\n\n---\n\nFirst {{ item }}.\n\n"+lua(`tools.add("search")`)+"\nSecond {{ reply }}.\n")
		cfg := g.cfg()
		cfg.Tools = []tools.Tool{searchTool()}
		r := runP(t, p, "", cfg)
		r.ok(t, "R(Second R(First a.).),R(Second R(First b.).)")
		for _, req := range g.Requests() {
			first := strings.HasPrefix(lastUser(req), "First")
			if got := toolNames(req); first != (len(got) == 0) {
				t.Fatalf("request %q advertised %v", lastUser(req), got)
			}
		}
		if r.Turns != 4 || r.rec.count(ModelTurnCompleted) != 4 {
			t.Fatalf("turns %d, observed %d", r.Turns, r.rec.count(ModelTurnCompleted))
		}
	})
	t.Run("infer", func(t *testing.T) {
		g := newGW(t)
		g.Respond(echo)
		p := fanoutPrompt(t, defaultModel, `return table.concat(fanout("## W", {"a", "b"}), ",")`,
			lua(`return models.infer("infer " .. item) .. writer:infer("again")`))
		runP(t, p, "", g.cfg()).ok(t, "R(infer a)R(again),R(infer b)R(again)")
	})
	t.Run("unknown alias in infer", func(t *testing.T) {
		g := newGW(t)
		p := fanoutPrompt(t, defaultModel, `fanout("## W", {"a"})`, lua(`return models.get("nope"):infer("x")`))
		runP(t, p, "", g.cfg()).fails(t, KindLua, `models.get alias "nope" was not declared by models.need`)
	})
	t.Run("epilog sees sys.model and the item renders as JSON", func(t *testing.T) {
		g := newGW(t)
		g.Respond(echo)
		p := fanoutPrompt(t, defaultModel, `return fanout("## W", {{k = 1, list = {1, 2}}})[1].text`,
			"About {{ item }}.\n\n"+lua(`return sys.model .. " " .. reply`))
		runP(t, p, "", g.cfg()).ok(t, `test-model R(About {"k":1,"list":[1,2]}.)`)
	})
}

// Fanout arms share the run's client; with none, an arm's model call fails
// saying what to set, and the environment is not read for one.
func TestFanout_NoClient(t *testing.T) {
	g := newGW(t)
	g.Respond(echo)
	t.Setenv(gateway.EnvURL, g.URL())
	t.Setenv(gateway.EnvAPIKey, g.APIKey())
	p := fanoutPrompt(t, defaultModel, `fanout("## W", {"a", "b"})`, "Say {{ item }}.\n")
	cfg := Options{Models: g.cfg().Models}
	runP(t, p, "", cfg).fails(t, KindCompletion, gateway.EnvURL)
	if n := len(g.Requests()); n != 0 {
		t.Errorf("%d requests reached the gateway the environment names", n)
	}

	p = fanoutPrompt(t, defaultModel, `return table.concat(fanout("## W", {"a", "b"}), ",")`, "Say {{ item }}.\n")
	runP(t, p, "", g.cfg()).ok(t, "R(Say a.),R(Say b.)")
}

func TestFanout_ControlSurfaceInsideArms(t *testing.T) {
	// Main's arms see Main's visible set without W (Other, List, MainKid)
	// plus W's children (WKid).
	build := func(workerLua string) *prompt.Prompt {
		return parse(t, "# T\n\n## Main\n\n"+lua(`return table.concat(fanout("## W", {"a"}), ",")`)+
			"\n### MainKid\n\n"+lua(`reply = "main kid"`)+
			"\n## W\n\n---\n\n"+lua(workerLua)+
			"\n### WKid\n\n"+lua(`reply = "wkid saw " .. tostring(reply)`)+
			"\n### WKid2\n\n"+lua(`if item then return "wkid2 item" end reply = reply .. "+wkid2"`)+
			"\n## Other\n\n---\n\n"+lua(`reply = "other " .. args`)+
			"\n## List\n\n---\n\n- one\n- two\n"+
			"\n## Silent\n\n---\n\n"+lua(`local x = 1`))
	}
	cases := []struct{ name, worker, want string }{
		{"execute a sibling", `return execute("## Other", item)`, "other a"},
		{"execute the caller's child", `return execute("### MainKid")`, "main kid"},
		{"execute the worker's child", `return execute("### WKid")`, "wkid saw nil+wkid2"},
		{"list_from_section", `return table.concat(list_from_section("## List"), "+")`, "one+two"},
		{"nested fanout", `local r = fanout("### WKid2", {"x", "y"}) return r[1].text .. sys.index .. r[2].text`, "wkid2 item1wkid2 item"},
		{"jump to a child runs the child chain", `reply = "j"; jump("### WKid")`, "wkid saw j+wkid2"},
		{"jump to a sibling runs a chain from it", `jump("## Other")`, "other "},
		{"jump to a silent chain", `jump("## Silent")`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runP(t, build(c.worker), "", Options{}).ok(t, c.want)
		})
	}
	t.Run("non-visible headings", func(t *testing.T) {
		r := runP(t, build(`execute("## Main")`), "", Options{})
		r.fails(t, KindLua, "section heading `## Main` not found; available sections: ## Other, ## List, ## Silent, ### MainKid, ### WKid, ### WKid2")
		runP(t, build(`execute("## W")`), "", Options{}).fails(t, KindLua, "section heading `## W` not found")
	})
}

func TestFanout_IncomingReply(t *testing.T) {
	// Arms start from the caller's incoming reply, not its latest one.
	p := parse(t, "# T\n\n## Before\n\n"+lua(`reply = "incoming"`)+
		"\n## Main\n\n"+lua(`reply = "latest"; local r = fanout("## W", {"a"}); return r[1].text .. "|" .. tostring(r[1].ok)`)+
		"\n## W\n\n---\n\n"+lua(`local x = 1`))
	runP(t, p, "", Options{}).ok(t, "incoming|true")
	p = fanoutPrompt(t, "", `local r = fanout("## W", {"a"}); return "[" .. r[1].text .. "]" .. tostring(r[1].ok)`, lua(`local x = 1`))
	runP(t, p, "", Options{}).ok(t, "[]true")
}

func TestFanout_ArmGlobals(t *testing.T) {
	t.Run("shared replay sees item", func(t *testing.T) {
		p := parse(t, "# T\n\n```lua shared\nseen = item\n```\n\n## Main\n\n"+
			lua(`return tostring(seen) .. "|" .. table.concat(fanout("## W", {"a", "b"}), ",")`)+
			"\n## W\n\n---\n\n"+lua(`return seen`))
		runP(t, p, "", Options{}).ok(t, "nil|a,b")
	})
	t.Run("sys in arms", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`return sys.id .. ":" .. table.concat(fanout("## W", {"a", "b"}), ",")`)+
			"\n## W\n\n---\n\n"+lua(`
local ok, err = pcall(function() return sys.taskid end)
assert(not ok and err:find("unknown sys field 'taskid'", 1, true))
return sys.section_name .. sys.index .. "#" .. sys.id`)+
			"\n## Next\n\n"+lua(`return "next " .. sys.id .. " after " .. store.read("x")`))
		// The caller returned, so Next never runs; a second prompt checks
		// the id after the arms.
		runP(t, p, "", Options{}).ok(t, "1:W1#2,W2#3")
		p = parse(t, "# T\n\n## Main\n\n"+lua(`fanout("## W", {"a", "b"})`)+
			"\n## W\n\n---\n\n"+lua(`return sys.id`)+"\n## Next\n\n"+lua(`return "next " .. sys.id`))
		runP(t, p, "", Options{}).ok(t, "next 4")
	})
	t.Run("each arm gets a fresh clone of var", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`
var.n = 10
var.nested = {k = "caller"}
local r = fanout("## W", {1, 2, 3})
return table.concat(r, ",") .. "|" .. var.n .. var.nested.k`)+
			"\n## W\n\n---\n\n"+lua(`var.n = var.n + item; var.nested.k = "arm"; return var.n`))
		runP(t, p, "", Options{}).ok(t, "11,12,13|10caller")
	})
	t.Run("sandbox", func(t *testing.T) {
		p := fanoutPrompt(t, "", `return table.concat(fanout("## W", {"a", "b"}), ",")`, lua(sandboxProbe+"\nreturn probe"))
		runP(t, p, "", Options{}).ok(t, "absent:,absent:")
	})
	t.Run("args are the caller's", func(t *testing.T) {
		p := parse(t, "# T\n\n## Main\n\n"+lua(`return args .. "|" .. execute("## Sub", "chain input")`)+
			"\n## Sub\n\n---\n\n"+lua(`return fanout("## W", {"a"})[1].text`)+
			"\n## W\n\n---\n\n"+lua(`return args .. " " .. item`))
		runP(t, p, "run args", Options{}).ok(t, "run args|chain input a")
	})
}

func TestFanout_DepthCap(t *testing.T) {
	// R and S execute each other with the depth as args until stop, then
	// fan out to the other. An arm executes when exec is set.
	section := func(name, other string, stop int, armExecutes bool) string {
		t.Helper()
		armLua := `return "arm at " .. args`
		if armExecutes {
			// The caller is not visible to its arms; Main is.
			armLua = `return execute("## Main")`
		}
		return fmt.Sprintf("\n## %s\n\n---\n\n", name) + lua(fmt.Sprintf(`
if item then %s end
local d = tonumber(args)
if d < %d then return execute("## %s", tostring(d + 1)) end
return "fanout at " .. d .. ": " .. fanout("## %s", {"x"})[1].text`, armLua, stop, other, other))
	}
	build := func(stop int, armExecutes bool) *prompt.Prompt {
		return parse(t, "# T\n\n## Main\n\n"+lua(`return execute("## R", "1")`)+
			section("R", "S", stop, armExecutes)+section("S", "R", stop, armExecutes))
	}
	runP(t, build(7, false), "", Options{}).ok(t, "fanout at 7: arm at 7")
	runP(t, build(8, false), "", Options{}).fails(t, KindLua, "fanout recursion exceeded cap of 8")
	runP(t, build(7, true), "", Options{}).fails(t, KindLua, "execute recursion exceeded cap of 8")
}

func TestFanout_LogsAndDebugCaptureFromArms(t *testing.T) {
	g := newGW(t)
	g.Respond(echo)
	var (
		mu    sync.Mutex
		turns []DebugTurn
	)
	cfg := g.cfg()
	cfg.Execution = "run-fanout"
	cfg.Debug = func(d DebugTurn) {
		mu.Lock()
		defer mu.Unlock()
		turns = append(turns, d)
	}
	p := fanoutPrompt(t, defaultModel, `fanout("## W", {"a", "b", "c"}); return models.infer("caller")`,
		lua(`log("arm " .. sys.index .. " step 1")`)+"\nSay {{ item }}.\n\n"+lua(`log("arm " .. sys.index .. " step 2")`))
	r := runP(t, p, "", cfg)
	r.ok(t, "R(caller)")
	// Arms interleave, but each arm's lines keep their order.
	logs := r.rec.logs()
	for i := 1; i <= 3; i++ {
		one := slices.Index(logs, fmt.Sprintf("Lua: arm %d step 1", i))
		two := slices.Index(logs, fmt.Sprintf("Lua: arm %d step 2", i))
		if one < 0 || two < one {
			t.Fatalf("arm %d log lines out of order or missing: %v", i, logs)
		}
	}
	if len(logs) != 6 {
		t.Fatalf("logs %v", logs)
	}
	for _, e := range r.rec.events {
		if e.Execution != "run-fanout" {
			t.Fatalf("event %v carries execution %q", e, e.Execution)
		}
	}
	if len(turns) != 4 || r.Turns != 4 {
		t.Fatalf("%d debug turns, %d counted", len(turns), r.Turns)
	}
	var idx []int
	workers := 0
	for _, d := range turns {
		idx = append(idx, d.Turn)
		if d.Section == "W" && len(d.Request) > 0 && len(d.Response) > 0 {
			workers++
		}
	}
	slices.Sort(idx)
	if workers != 3 || !slices.Equal(idx, []int{1, 2, 3, 4}) {
		t.Fatalf("debug turns: %d from arms, indices %v", workers, idx)
	}
}

func TestFanout_CancelInFlightArms(t *testing.T) {
	// Nine arms, eight slots: every arm holds its model call at the gate.
	g := newGW(t)
	gate := gatewaytest.NewGate()
	defer gate.Release()
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Gated(gate, gatewaytest.Text("never")) })
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	rec := &recorder{}
	cfg := g.cfg()
	cfg.Observer = rec
	p := fanoutPrompt(t, defaultModel, `fanout("## W", {1, 2, 3, 4, 5, 6, 7, 8, 9})`, "Item {{ item }}.\n")
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, p, "", store.New(), cfg)
		done <- err
	}()
	<-gate.ArrivedN(8)
	if n := g.InFlight(); n != 8 {
		t.Fatalf("%d requests in flight, want 8", n)
	}
	if n := rec.count(FanoutArmStarted); n != 8 {
		t.Fatalf("%d arms started while 8 were held", n)
	}
	cancel(errors.New("the caller gave up"))
	wantCancelled(t, <-done, "the caller gave up")
	if rec.count(FanoutArmStarted) != 8 || rec.count(FanoutArmCancelled) != 8 ||
		rec.count(FanoutArmFailed)+rec.count(FanoutArmSucceeded) != 0 || rec.count(ModelTurnFailed) != 0 {
		t.Fatalf("events %v", rec.sectionEvents("W"))
	}
	if g.MaxInFlight() != 8 {
		t.Fatalf("max in flight %d", g.MaxInFlight())
	}
}

func TestFanout_NinthArmWaitsForASlot(t *testing.T) {
	g := newGW(t)
	gate := gatewaytest.NewGate()
	defer gate.Release()
	var mu sync.Mutex
	arrived := 0
	g.Respond(func(req gatewaytest.Request) gatewaytest.Reply {
		mu.Lock()
		defer mu.Unlock()
		arrived++
		if arrived <= 8 {
			return gatewaytest.Gated(gate, echo(req))
		}
		return echo(req)
	})
	rec := &recorder{}
	cfg := g.cfg()
	cfg.Observer = rec
	p := fanoutPrompt(t, defaultModel, `return table.concat(fanout("## W", {1, 2, 3, 4, 5, 6, 7, 8, 9}), ",")`, "{{ item }}\n")
	done := make(chan result, 1)
	go func() {
		res, err := Run(context.Background(), p, "", store.New(), cfg)
		done <- result{Result: res, err: err}
	}()
	<-gate.ArrivedN(8)
	if n := rec.count(FanoutArmStarted); n != 8 {
		t.Fatalf("%d arms started while 8 were held at the gateway", n)
	}
	gate.Release()
	r := <-done
	r.ok(t, "R(1),R(2),R(3),R(4),R(5),R(6),R(7),R(8),R(9)")
	if g.MaxInFlight() != 8 || len(g.Requests()) != 9 {
		t.Fatalf("max in flight %d over %d requests", g.MaxInFlight(), len(g.Requests()))
	}
}

func TestFanout_PreCancelled(t *testing.T) {
	p := fanoutPrompt(t, "", `fanout("## W", {"a"})`, lua(`return item`))
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("cancelled before the fanout")
	cancel(cause)
	rec := &recorder{}
	r, err := newRun(p, "", nil, Options{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	u := r.newUnit(frame{}, place{slice: p.Sections, index: 0}, ViaWalk)
	u.vm = luavm.New(ctx, u.vmOptions(luavm.KindSection, 1, time.Now(), "", nil, nil))
	defer u.vm.Close()
	_, err = u.fanout(ctx, "## W", []any{"a"})
	wantCancelled(t, err, cause.Error())
	if n := rec.count(FanoutArmStarted); n != 0 {
		t.Fatalf("%d arms started", n)
	}
	// Through Run, the cancelled run fails before any arm starts.
	res, err := Run(ctx, p, "", nil, Options{Observer: rec})
	wantCancelled(t, err, cause.Error())
	if res.Value != "" || rec.count(FanoutArmStarted) != 0 {
		t.Fatalf("value %q, events %v", res.Value, rec.lines())
	}
}

func TestFanout_ArmErrorsKeepTheirKind(t *testing.T) {
	g := newGW(t)
	g.Respond(func(req gatewaytest.Request) gatewaytest.Reply {
		if strings.Contains(lastUser(req), "b") {
			return gatewaytest.Status(500, `{"error":{"message":"boom"}}`)
		}
		return echo(req)
	})
	p := fanoutPrompt(t, defaultModel, `fanout("## W", {"a", "b"})`, "Say {{ item }}.\n")
	r := runP(t, p, "", g.cfg())
	r.fails(t, KindCompletion, "")
	if r.rec.count(FanoutArmFailed) != 1 {
		t.Fatalf("events %v", r.rec.sectionEvents("W"))
	}
	// A caught arm failure leaves the caller running.
	p = fanoutPrompt(t, "", `local ok, err = pcall(fanout, "## W", {"a"}); return tostring(ok) .. " " .. tostring(err)`,
		lua(`error("arm says no")`))
	r = runP(t, p, "", Options{})
	if r.err != nil || !strings.HasPrefix(r.Value, "false ") || !strings.Contains(r.Value, "arm says no") {
		t.Fatalf("value %q, err %v", r.Value, r.err)
	}
}

func TestFanout_FromALocalToolHandler(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "spread", Args: map[string]any{"csv": "a,b"}}), gatewaytest.Text("done"))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`
tools.add_local("spread", "Process each value", {csv = "string"}, function(a)
  local list = {}
  for v in string.gmatch(a.csv, "[^,]+") do list[#list + 1] = v end
  return table.concat(fanout("## W", list), "+")
end)`)+"\nGo.\n\n"+lua(`return reply`)+"\n## W\n\n---\n\n"+lua(`return item .. sys.index`))
	runP(t, p, "", g.cfg()).ok(t, "done")
	if m := g.Requests()[1].Messages; m[len(m)-1]["content"] != "a1+b2" {
		t.Fatalf("handler result %v", m[len(m)-1])
	}
}
