package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/match"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// prompt-language §8.4 Tools API.

const (
	searchNeed = "Search the web and return a list of results (title, url, description)."
	fetchNeed  = "Fetch a web page and return its main content as markdown."
)

func bothTools() []tools.Tool { return []tools.Tool{searchTool(), fetchTool()} }

func TestTools_NeedRecordsAndReturnsFrozenHandle(t *testing.T) {
	p := parse(t, "# T\n\n"+lua(`
local s = tools.need("search", "`+searchNeed+`", "search override")
local ok, err = pcall(function() s.name = "x" end)
assert(not ok and string.find(err, 'Tool objects are frozen: cannot assign field "name"'))
store.write("h", s.name .. "|" .. s.description .. "|" .. s.wire_name .. "|" .. s.parameters.required[1] .. "|" .. tostring(s.untrusted))`)+
		"\n## A\n\n"+lua(`return store.read("h") .. "|" .. search.name .. "|" .. tostring(next(search.parameters))`))
	runP(t, p, "", Options{Tools: bothTools()}).ok(t, "search|"+searchNeed+"|web_search|query|false|search|nil")
}

func TestTools_AliasGrammarAndRecordedErrors(t *testing.T) {
	cases := []struct{ name, h1, want string }{
		{"grammar", `tools.need("1x", "` + searchNeed + `")`, `invalid tool alias "1x": expected [A-Za-z][A-Za-z0-9_-]{0,63}`},
		{"too long", `tools.need("` + strings.Repeat("a", 65) + `", "` + searchNeed + `")`, "invalid tool alias"},
		{"duplicate alias survives pcall", `tools.need("s", "` + searchNeed + `"); pcall(tools.need, "s", "` + fetchNeed + `")`, `tool alias "s" was declared more than once`},
		{"no match survives pcall", `pcall(tools.need, "x", "Translate a sentence into French")`, `no tool matches capability "Translate a sentence into French"`},
		{"identity selected twice", `tools.need("a", "` + searchNeed + `"); pcall(tools.need, "b", "` + searchNeed + ` ")`, `was selected by both aliases "a" and "b"`},
		{"always undeclared", `tools.always("nope")`, `tools.always alias "nope" was not declared by tools.need`},
		{"always twice", `tools.need("s", "` + searchNeed + `"); tools.always("s"); tools.always("s")`, `tools.always alias "s" was recorded more than once`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, "# T\n\n"+lua(c.h1)+lua(`store.write("second", "ran")`)+"\n## A\n\n"+lua(`return 1`))
			r := runP(t, p, "", Options{Tools: bothTools()})
			if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", r.err, c.want)
			}
			if ok, _ := r.st.Exists("second"); ok {
				t.Fatal("a later H1 block ran after a failure")
			}
		})
	}
	// Resolution errors are Binding errors.
	p := parse(t, "# T\n\n"+lua(`pcall(tools.need, "x", "Translate a sentence into French")`))
	runP(t, p, "", Options{Tools: bothTools()}).fails(t, KindBinding, "no tool matches capability")
}

func TestTools_PhaseErrors(t *testing.T) {
	p := parse(t, "# T\n\n"+lua(`store.append("h1", "x")`)+"\n## A\n\n"+lua(`assert(store.read("h1") == "x")`)+
		"\n## B\n\n"+lua(`tools.need("s", "`+searchNeed+`")`))
	r := runP(t, p, "", Options{Tools: bothTools()})
	r.fails(t, KindLua, "tools.need is only available during live H1 execution")
	if got, _ := r.st.Read("h1", storeAll); got != "x" {
		t.Fatalf("H1 ran %q times", got)
	}
}

const needBoth = "```lua\ntools.need(\"search\", \"" + searchNeed + "\", \"need override\")\ntools.need(\"fetch\", \"" + fetchNeed + "\")\nmodels.default(\"writer\", \"A general assistant model\")\n```\n"

func TestTools_ScopeOrderOverridesAndDispatch(t *testing.T) {
	g := newGW(t)
	search, fetch := searchTool(), fetchTool()
	cfg := g.cfg()
	cfg.Tools = []tools.Tool{search, fetch}
	g.Enqueue(
		gatewaytest.Text("no tools in A"),
		gatewaytest.Calls(gatewaytest.Call{Name: "search", Args: map[string]any{"query": "q"}}, gatewaytest.Call{Name: "fetch", Args: map[string]any{"url": "u"}}),
		gatewaytest.Text("B done"),
	)
	p := parse(t, "# T\n\n"+needBoth+lua(`tools.always("search", "always override")`)+
		"\n## A\n\nNothing added.\n\n## B\n\n"+lua(`tools.add({"fetch", search}); tools.add("search", "add override"); tools.add()`)+"\nUse both.\n\n"+
		lua(`return tools.calls.search .. tools.calls.fetch`))
	runP(t, p, "", cfg).ok(t, "11")
	reqs := g.Requests()
	if got := strings.Join(toolNames(reqs[0]), ","); got != "search" {
		t.Fatalf("A advertised %q (declared tools must not leak without always/add)", got)
	}
	if got := strings.Join(toolNames(reqs[1]), ","); got != "search,fetch" {
		t.Fatalf("B advertised %q", got)
	}
	fns := reqs[1].Body["tools"].([]any)
	f0 := fns[0].(map[string]any)["function"].(map[string]any)
	if f0["description"] != "add override" {
		t.Fatalf("search description %v", f0["description"])
	}
	if params := f0["parameters"].(map[string]any); params["required"].([]any)[0] != "query" {
		t.Fatalf("concrete schema not advertised: %v", params)
	}
	a0 := reqs[0].Body["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)
	if a0["description"] != "always override" {
		t.Fatalf("always override lost: %v", a0["description"])
	}
	if len(search.calls) != 1 || len(fetch.calls) != 1 {
		t.Fatalf("dispatch by identity: search %v fetch %v", search.calls, fetch.calls)
	}
}

func TestTools_AddErrors(t *testing.T) {
	cases := []struct{ lua, want string }{
		{`tools.add("nope")`, `tools.add alias "nope" was not declared by tools.need`},
		{`tools.add({"fetch", "nope"})`, `tools.add alias "nope" was not declared by tools.need`},
		{`tools.add({"fetch"}, "o")`, "tools.add array form takes no override"},
		{`tools.add("fetch", 1)`, "tools.add override must be a string, got number"},
		{`tools.add("fetch", "o", true)`, "tools.add takes one alias plus an optional override, got extra boolean"},
		{`tools.add(true)`, "tools.add expects strings, Tool objects, or arrays of either, got boolean"},
	}
	for _, c := range cases {
		p := parse(t, "# T\n\n"+needBoth+"\n## A\n\n"+lua(c.lua))
		runP(t, p, "", Options{Tools: bothTools(), Models: []gateway.Model{testModel}}).fails(t, KindLua, c.want)
	}
	// A failed bulk add records nothing.
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("ok"))
	cfg := g.cfg()
	cfg.Tools = bothTools()
	p := parse(t, "# T\n\n"+needBoth+"\n## A\n\n"+lua(`assert(not pcall(tools.add, {"fetch", "nope"}))`)+"\nGo.\n")
	runP(t, p, "", cfg).ok(t, "ok")
	if names := toolNames(g.Requests()[0]); len(names) != 0 {
		t.Fatalf("failed add leaked %v", names)
	}
}

func TestTools_CallsAndScopeErrors(t *testing.T) {
	g := newGW(t)
	cfg := g.cfg()
	failing := searchTool()
	failing.fn = func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{}, errors.New("nope")
	}
	cfg.Tools = []tools.Tool{failing, fetchTool()}
	// A failing live tool fails the run (the count of a failing call is
	// checked in TestTools_CallsCountFailingCalls).
	g.Enqueue(callSearch("q"))
	p := parse(t, "# T\n\n"+needBoth+"\n## A\n\n"+lua(`tools.add("search")`)+"\nGo.\n")
	r := runP(t, p, "", cfg)
	r.fails(t, KindTool, "tool call failure: nope")

	cfg.Tools = bothTools()
	g.Enqueue(gatewaytest.Text("ok"))
	p = parse(t, "# T\n\n"+needBoth+"\n## A\n\n"+lua(`tools.add("search"); assert(tools.calls == nil)`)+"\nGo.\n\n"+
		lua(`assert(tools.calls.search == 0)
local ok, e = pcall(function() return tools.calls.serch end)
assert(not ok and string.find(e, 'tools.calls: "serch" is not in this section', 1, true) and string.find(e, "in-scope aliases: [search] - check for typos", 1, true), e)
ok, e = pcall(function() return tools.calls.fetch end)
assert(not ok and string.find(e, "(alias was declared by tools.need but not added to this section's scope)", 1, true), e)
assert(not pcall(function() tools.calls.search = 3 end))
return "checked"`))
	runP(t, p, "", cfg).ok(t, "checked")

	// The model calling a declared but unscoped alias is a hard error.
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "fetch", Args: map[string]any{"url": "u"}}))
	p = parse(t, "# T\n\n"+needBoth+"\n## A\n\n"+lua(`tools.add("search")`)+"\nGo.\n")
	runP(t, p, "", cfg).fails(t, KindTool, `tool "fetch" is not in this section's scope; in-scope aliases: [search] (alias was declared by tools.need but not added to this section's scope)`)
}

func TestTools_Local(t *testing.T) {
	g := newGW(t)
	g.Enqueue(
		gatewaytest.Calls(gatewaytest.Call{Name: "shout", Args: map[string]any{"text": "a"}}, gatewaytest.Call{Name: "shout", Args: map[string]any{"text": "b"}}),
		gatewaytest.Calls(gatewaytest.Call{Name: "count"}),
		gatewaytest.Text("second done"),
	)
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`
seen = {}
tools.add_local("shout", "Upper-case text", {text = {"string", "the text"}}, function(args)
  store.append("shouted", args.text)
  seen[#seen + 1] = args.text
  return string.upper(args.text)
end)`)+"\nShout.\n\n"+lua(`
assert(#seen == 2 and tools.calls.shout == 2)
tools.add_local("count", "Count", {}, function() return #seen end)`)+"\nCount.\n\n"+lua(`return reply .. "|" .. store.read("shouted") .. "|" .. tools.calls.count`))
	runP(t, p, "", g.cfg()).ok(t, "second done|ab|1")
	reqs := g.Requests()
	if got := toolNames(reqs[0]); strings.Join(got, ",") != "shout" {
		t.Fatalf("first block tools %v", got)
	}
	if got := toolNames(reqs[1]); strings.Join(got, ",") != "shout,count" {
		t.Fatalf("second block tools %v", got)
	}
	// The second block's request carries the first block's tool echo.
	m := reqs[1].Messages
	if m[2]["content"] != "A" || m[3]["content"] != "B" || m[4]["content"] != "Count." {
		t.Fatalf("handler results (trusted, verbatim) %v", m)
	}
	if m := reqs[2].Messages; m[len(m)-1]["content"] != "2" {
		t.Fatalf("count result %v", m[len(m)-1])
	}
}

func TestTools_LocalErrors(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "bad"}))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`tools.add_local("bad", "fails", {}, function() error("handler broke") end)`)+"\nGo.\n")
	r := runP(t, p, "", g.cfg())
	r.fails(t, KindTool, "handler broke")
	if r.rec.count(ToolCallFailed) != 1 {
		t.Fatalf("observations %v", r.rec.lines())
	}
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "hop"}), gatewaytest.Text("ok"))
	p = parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`tools.add_local("hop", "hop", {}, function() return type(jump) end)`)+"\nGo.\n\n"+lua(`return type(jump)`))
	runP(t, p, "", g.cfg()).ok(t, "function")
	if m := g.Requests()[len(g.Requests())-1].Messages; m[len(m)-1]["content"] != "nil" {
		t.Fatalf("jump visible in handler: %v", m[len(m)-1])
	}
	cfg := Options{Tools: bothTools(), Models: g.cfg().Models}
	p = parse(t, "# T\n\n"+needBoth+"\n## A\n\n"+lua(`tools.add_local("search", "x", {}, function() end)`))
	runP(t, p, "", cfg).fails(t, KindLua, `tools.add_local alias "search" duplicates a declared tool alias`)
	p = parse(t, "# T\n\n## A\n\n"+lua(`tools.add_local("x", "x", {}, function() end); tools.add_local("x", "x", {}, function() end)`))
	runP(t, p, "", cfg).fails(t, KindLua, `tools.add_local alias "x" is already registered`)
}

// pairRanker scores a need 1 against the doc whose description equals it
// and reports every two docs of the same group as near-duplicates.
type pairRanker struct{}

type pairIndex struct{ docs []match.Doc }

func (pairRanker) Index(_ context.Context, docs []match.Doc) (match.Index, error) {
	return pairIndex{docs}, nil
}

func (ix pairIndex) Score(_ context.Context, need string) ([]float64, error) {
	out := make([]float64, len(ix.docs))
	for i, d := range ix.docs {
		if d.Description == need || d.Name == "model" {
			out[i] = 1
		}
	}
	return out, nil
}

func (ix pairIndex) DocSimilarity(i, j int) float64 {
	if i == j {
		return 1
	}
	return 0.99
}

func (ix pairIndex) Len() int { return len(ix.docs) }

func TestTools_NearDuplicates(t *testing.T) {
	g := newGW(t)
	cfg := g.cfg()
	cfg.Tools = []tools.Tool{
		&fakeTool{id: tools.ID{Server: "a", Name: "search_one"}, desc: "Search engine one"},
		&fakeTool{id: tools.ID{Server: "b", Name: "search_two"}, desc: "Search engine two"},
	}
	cfg.Ranker = pairRanker{}
	h1 := "# T\n\n" + lua(`tools.need("one", "Search engine one"); tools.need("two", "Search engine two"); models.default("w", "A general assistant model")`)
	g.Enqueue(gatewaytest.Text("a"), gatewaytest.Text("b"))
	p := parse(t, h1+"\n## A\n\n"+lua(`tools.add("one")`)+"\nGo.\n\n## B\n\n"+lua(`tools.add("two")`)+"\nGo.\n")
	runP(t, p, "", cfg).ok(t, "b")
	before := len(g.Requests())
	p = parse(t, h1+"\n## A\n\n"+lua(`tools.add({"one", "two"})`)+"\nGo.\n")
	r := runP(t, p, "", cfg)
	r.fails(t, KindBinding, `tool aliases "one" (a/search_one) and "two" (b/search_two) are near-duplicates with similarity 0.990`)
	if len(g.Requests()) != before {
		t.Fatal("a model call was made before the scope check")
	}
	if r.rec.count(ToolScopeValidationFailed) != 1 {
		t.Fatalf("observations %v", r.rec.lines())
	}
}

func (ix pairIndex) Doc(i int) match.Doc { return ix.docs[i] }

// prompt-language §8.4: tools.calls increments on dispatch, also when the
// tool errors. A failing call ends the run, so the failing handler reads the
// count itself, after dispatch and before it fails.
func TestTools_CallsCountFailingCalls(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "ok"}), gatewaytest.Calls(gatewaytest.Call{Name: "bad"}))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`
tools.add_local("ok", "works", {}, function() return "fine" end)
tools.add_local("bad", "fails", {}, function()
  log("calls ok=" .. tools.calls.ok .. " bad=" .. tools.calls.bad)
  error("handler broke")
end)`)+"\nGo.\n")
	r := runP(t, p, "", g.cfg())
	r.fails(t, KindTool, "handler broke")
	if got := strings.Join(r.rec.logs(), ","); got != "Lua: calls ok=1 bad=1" {
		t.Fatalf("counts seen by the failing call: %q", got)
	}
}

// prompt-language §8.4: an override given to tools.need alone is what the
// model sees.
func TestTools_NeedOverrideReachesTheWire(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("ok"))
	cfg := g.cfg()
	cfg.Tools = bothTools()
	p := parse(t, "# T\n\n"+needBoth+"\n## A\n\n"+lua(`tools.add("search"); tools.add("fetch")`)+"\nGo.\n")
	runP(t, p, "", cfg).ok(t, "ok")
	fns := g.Requests()[0].Body["tools"].([]any)
	var descs []string
	for _, f := range fns {
		descs = append(descs, f.(map[string]any)["function"].(map[string]any)["description"].(string))
	}
	if len(descs) != 2 || descs[0] != "need override" || descs[1] != fetchNeed {
		t.Fatalf("descriptions %q: search must carry its need override, fetch its own description", descs)
	}
}

// prompt-language §8.4: tools.add of a declared tool between two prose blocks
// changes the scope of the second block only.
func TestTools_AddBetweenProseBlocks(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("first"), gatewaytest.Text("second"))
	cfg := g.cfg()
	cfg.Tools = bothTools()
	p := parse(t, "# T\n\n"+needBoth+"\n## A\n\n"+lua(`tools.add("search")`)+"\nFirst.\n\n"+lua(`tools.add("fetch")`)+"\nSecond.\n")
	runP(t, p, "", cfg).ok(t, "second")
	reqs := g.Requests()
	if got := strings.Join(toolNames(reqs[0]), ","); got != "search" {
		t.Fatalf("first block advertised %q", got)
	}
	if got := strings.Join(toolNames(reqs[1]), ","); got != "search,fetch" {
		t.Fatalf("second block advertised %q", got)
	}
}
