package luavm

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkSize fails when var's running size estimate has drifted from a
// fresh measurement of its data.
func checkSize(t *testing.T, v *Var) {
	t.Helper()
	if got, _ := measure(v.root); v.size != got {
		t.Fatalf("var size estimate %d, measured %d (var %s)", v.size, got, v.JSON())
	}
}

func TestVarSizeEstimateStaysExact(t *testing.T) {
	v := NewVar()
	e := newEnv(t, Options{Var: v})
	checkSize(t, v)
	for _, src := range []string{
		`var.name = "x"; var.n = 3; var.list = {1, "two", true, {k = "v"}}`,
		`var.name = "longer name"; var.n = nil; var.list[2] = "2"`,
		`table.insert(var.list, "five"); table.insert(var.list, 1, "zero"); table.remove(var.list, 2)`,
		`var.list[2] = nil`, // a hole: the tail moves into fields
		`var.list[2] = "back"`,
		`var.sparse = {}; var.sparse[3] = "c"; var.sparse[2] = "b"; var.sparse[1] = "a"`,
		`var.copy = var.list; var.copy.extra = {deep = {er = 1}}`,
		`local keep = var.copy; var.copy = nil; keep.after = string.rep("x", 100)`,
		`var.obj = {a = {b = {c = "d"}}}; var.obj.a = "flat"`,
		`for i = 1, 200 do var["k" .. i] = i end for i = 1, 200, 2 do var["k" .. i] = nil end`,
	} {
		if _, err := e.run(t, src); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		checkSize(t, v)
	}
	// The estimate travels with var into the next section and into clones.
	next := newEnv(t, Options{Var: v})
	if _, err := next.run(t, `var.more = {1, 2, 3}`); err != nil {
		t.Fatal(err)
	}
	checkSize(t, v)
	checkSize(t, v.Clone())
}

func TestVarIsBounded(t *testing.T) {
	const limit = 1 << 20
	// Each var.k = var doubled var (copying it whole in one Go call): 20
	// rounds reached 417 MB. The doubling now stops at the limit, before
	// the copy.
	v := NewVar()
	e := newEnv(t, Options{Var: v, Limits: Limits{MaxVarBytes: limit}})
	mustFail(t, e, `var.a = {1} for i = 1, 40 do var["k" .. i] = var end`,
		"the assignment would grow var past its 1048576-byte limit")
	if v.size > limit {
		t.Fatalf("var grew to %d", v.size)
	}
	if _, ok := v.Lookup("k40"); ok {
		t.Fatal("the refused assignments were stored")
	}
	mustFail(t, e, `var["k99"] = var`, "var.k99: the assignment would grow var")
	checkSize(t, v)

	// A big Lua table is refused while it is converted; element-wise growth
	// is refused at the element that crosses the limit.
	for src, want := range map[string]string{
		`local t = {} for i = 1, 100000 do t[i] = i end var.t = t`:        "var.t: the assignment would grow var past",
		`var.list = {} for i = 1, 100000 do var.list[i] = i end`:          "var.list[",
		`var.s = {} for i = 1, 100000 do table.insert(var.s, "item") end`: "var.s[",
	} {
		g := newEnv(t, Options{Limits: Limits{MaxVarBytes: limit}})
		mustFail(t, g, src, want)
		checkSize(t, g.vm.varRoot)
	}

	// A table taken out of var no longer counts.
	fresh := newEnv(t, Options{Limits: Limits{MaxVarBytes: limit}})
	mustReturn(t, fresh, `var.a = {} local a = var.a var.a = nil for i = 1, 100000 do a[i] = i end return #a`, "100000")
	checkSize(t, fresh.vm.varRoot)
}

func TestVarNestingThroughProxiesIsBounded(t *testing.T) {
	e := newEnv(t, Options{})
	mustFail(t, e, `var.d = {} for i = 1, 3000 do var.d = {x = var.d} end`, "var.d.x must be JSON data, got a structure nested too deeply")
}

// var data is accepted wherever the host API takes a table (type() calls it
// one).
func TestVarDataWhereTablesAreExpected(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.run(t, `var.ts = {"search", "fetch"}; tools.add(var.ts)
var.p = {text = {"string", "the text"}}
tools.add_local("shout", "Upper-case", var.p, function(a) return a.text:upper() end)`); err != nil {
		t.Fatal(err)
	}
	if len(e.host.added) != 1 || strings.Join(e.host.added[0], ",") != "search,fetch" {
		t.Fatalf("added %v", e.host.added)
	}
	if got := string(e.host.locals["shout"]); got != `{"type":"object","properties":{"text":{"type":"string","description":"the text"}},"required":["text"]}` {
		t.Fatalf("schema %s", got)
	}
	mustReturn(t, e, `var.items = {"x", 2, {k = 1}}; local r = fanout("## W", var.items); return table.concat(r, ";")`, `x;2;{"k":1}`)

	h1 := newEnv(t, Options{Kind: KindH1, Sys: Sys{SectionName: "Title"}})
	mustReturn(t, h1, `var.o = {temperature = 0.5, max_tokens = 100}; local m = models.need("writer", "writes", var.o); return m.temperature .. "/" .. m.max_tokens`, "0.5/100")
	mustFail(t, h1, `models.need("w", "d", 5)`, "models.need opts must be a table when provided, got number")
}

// A handler that captured jump before it ran must not leave its section:
// the jump is refused where it is called instead of being dropped silently.
func TestCapturedJumpInsideLocalToolIsRefused(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.run(t, `local j = jump
tools.add_local("caught", "d", {}, function() local ok, err = pcall(j, "## B") return tostring(ok) .. " " .. err end)
tools.add_local("raw", "d", {}, function() j("## B") end)`); err != nil {
		t.Fatal(err)
	}
	out, err := e.vm.CallLocalTool("caught", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(out, "false") || !strings.Contains(out, "jump is not available inside a local tool handler") {
		t.Fatalf("caught: %q %v", out, err)
	}
	_, err = e.vm.CallLocalTool("raw", nil)
	if err == nil || !strings.Contains(err.Error(), "jump is not available inside a local tool handler") {
		t.Fatalf("raw: %v", err)
	}
	// The section's own jump still works afterwards.
	o, err := e.run(t, `jump("## Next")`)
	if err != nil || !o.Jumped || o.Target != "## Next" {
		t.Fatalf("later jump: %+v %v", o, err)
	}
}
