package luavm

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

// vandal changes everything a prompt can reach in its globals and
// libraries: library functions replaced, added and removed, globals
// removed and added, the string metatable's lookup replaced, a metatable
// on _G, and the libraries themselves dropped.
const vandal = `
string.upper = function() return "hacked" end
string.added = "hacked"
table.insert = nil
table.concat = function() return "hacked" end
math.floor = function() return -1 end
math.pi = 0
store.read = nil
tools.add = "hacked"
tools.need = "hacked"
models.use = nil
models.default = nil
getmetatable("").__index = {upper = function() return "hacked" end}
_G.added = "hacked"
assert, next, tostring, jump, execute, fanout = nil, nil, nil, nil, "hacked", nil
pairs = function() error("hacked") end
setmetatable(_G, {__index = function() return "hacked" end, __newindex = function() end})
string, table, math, sys, store = nil, nil, nil, nil, nil
return "done"`

// probe is what a fresh VM must see whatever another VM did.
const probe = `
local names = {}
for k, v in pairs(_G) do names[#names + 1] = k .. ":" .. type(v) end
table.sort(names)
return table.concat(names, ",") .. "|" .. string.upper("a") .. ("b"):upper() ..
  tostring(string.added) .. tostring(_G.added) .. tostring(math.floor(2.5)) ..
  string.format("%.2f", math.pi) .. table.concat({"x", "y"}, "-") ..
  type(table.insert) .. type(store.read) .. type(tools.add) .. type(tools.need) ..
  type(models.use) .. type(models.default) .. type(assert) .. type(next) ..
  type(jump) .. type(execute) .. type(fanout) .. tostring(getmetatable(_G))`

// fingerprint is a VM's global table as Go sees it: each global's name
// and type, the identity of every shared value (functions), and for each
// table its metatable and how many entries it holds itself.
func fingerprint(vm *VM) string {
	var out []string
	vm.L.G.Global.ForEach(func(k, v lua.LValue) {
		s := fmt.Sprintf("%s:%s", k, v.Type())
		switch x := v.(type) {
		case *lua.LFunction:
			s += fmt.Sprintf("@%p", x)
		case *lua.LTable:
			_, _, keys, _ := x.TableFields()
			s += fmt.Sprintf(" meta %p keys %d", x.Metatable, keys)
		}
		out = append(out, s)
	})
	slices.Sort(out)
	return fmt.Sprint(out, vm.L.G.Global.Metatable)
}

// TestRunsCannotChangeEachOthersGlobals is the safety of sharing the
// libraries and the globals' template across VMs: VMs of both kinds that
// change every global and library they can reach, all at once on their own
// goroutines (the race detector sees any write to shared state), leave a
// later VM's globals exactly as a VM made before them had them.
func TestRunsCannotChangeEachOthersGlobals(t *testing.T) {
	kinds := []Kind{KindH1, KindSection}
	name := map[Kind]string{KindH1: "H1", KindSection: "section"}
	before := map[Kind]string{}
	seen := map[Kind]string{}
	for _, kind := range kinds {
		e := newEnv(t, Options{Kind: kind})
		before[kind] = fingerprint(e.vm)
		out, err := e.run(t, probe)
		if err != nil || !out.Returned {
			t.Fatalf("probe in a fresh %s VM: %+v %v", name[kind], out, err)
		}
		seen[kind] = out.Value
	}
	if before[KindH1] == before[KindSection] {
		t.Fatal("the H1 and section globals should differ (their tools, models and control globals)")
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		kind := kinds[i%len(kinds)]
		wg.Go(func() {
			vm := New(t.Context(), Options{Kind: kind, Host: &fakeHost{}})
			defer vm.Close()
			out, err := vm.RunChunk(chunk(t, "vandal", 1, vandal))
			if err != nil || out.Value != "done" {
				errs <- fmt.Errorf("vandal in a %s VM: %+v %v", name[kind], out, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	for _, kind := range kinds {
		e := newEnv(t, Options{Kind: kind})
		if got := fingerprint(e.vm); got != before[kind] {
			t.Errorf("%s VM globals after the vandals:\n%s\nwant, as before them:\n%s", name[kind], got, before[kind])
		}
		out, err := e.run(t, probe)
		if err != nil || out.Value != seen[kind] {
			t.Errorf("%s VM probe after the vandals = %+v %v\nwant, as before them: %q", name[kind], out, err, seen[kind])
		}
	}
	if want := "|AB" + "nilnil2" + "3.14x-y" + "functionfunctionfunctionfunction"; !containsAfterNames(seen[KindSection], want) {
		t.Errorf("section probe %q does not show pristine libraries (want the part after the names to start %q)", seen[KindSection], want)
	}
}

// containsAfterNames reports whether the probe's result, after its list
// of global names, starts with want.
func containsAfterNames(probe, want string) bool {
	_, rest, ok := strings.Cut(probe, "|")
	return ok && strings.HasPrefix("|"+rest, want)
}

// TestVarargArgTable: a vararg function that does not use ... still gets
// Lua 5.0's arg table (CompatVarArg), its n and its elements, now that the
// interpreter sizes it for its one key; each call gets a table of its own.
// A chunk's own arg table is built but not reachable: arg there is the
// global, which the sandbox does not define.
func TestVarargArgTable(t *testing.T) {
	e := newEnv(t, Options{})
	mustReturn(t, e, `return type(arg)`, "nil")
	mustReturn(t, e, `
local function f(a, ...) arg.extra = true; return arg.n .. ":" .. tostring(arg[1]) .. tostring(arg[2]) .. tostring(arg[3]) end
local function g(...) return tostring(arg.extra) end
return f(1, "x", "y") .. "|" .. f(1) .. "|" .. g(7)`, "2:xynil|0:nilnilnil|nil")
	mustReturn(t, e, `local function h(...) local n = 0; for k in pairs(arg) do n = n + 1 end; return n end; return h() .. h(5, 6)`, "13")
}

// TestGlobalsAddedByOneRunAreAnotherRunsOwn: a VM's global table shares
// the template's key order until it adds a global (lua's ownOrder). A
// global one VM adds must not enter the template's order: a later VM that
// adds the same name must still find it in pairs(_G), and a VM that does
// not add it must not see it.
func TestGlobalsAddedByOneRunAreAnotherRunsOwn(t *testing.T) {
	const add = `fresh, _G.other = 1, 2
local seen = 0
for k in pairs(_G) do if k == "fresh" or k == "other" then seen = seen + 1 end end
return tostring(seen)`
	const look = `local seen = 0
for k in pairs(_G) do if k == "fresh" or k == "other" then seen = seen + 1 end end
return tostring(seen) .. tostring(fresh)`
	for _, kind := range []Kind{KindH1, KindSection} {
		for i, c := range []struct{ src, want string }{{add, "2"}, {look, "0nil"}, {add, "2"}, {look, "0nil"}} {
			vm := New(t.Context(), Options{Kind: kind, Host: &fakeHost{}})
			out, err := vm.RunChunk(chunk(t, "globals", 1, c.src))
			vm.Close()
			if err != nil || out.Value != c.want {
				t.Fatalf("kind %d, VM %d: %+v %v, want %q", kind, i, out, err, c.want)
			}
		}
	}
}

// TestGuardNonceIsOnePerRun: the nonce, minted on first use, is the same
// for every VM of a run that asks, on any goroutine, and differs between
// runs.
func TestGuardNonceIsOnePerRun(t *testing.T) {
	a, _ := NewGuard()
	b, _ := NewGuard()
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() { got[i] = a.Nonce() })
	}
	wg.Wait()
	for _, n := range got {
		if n != got[0] || len(n) != 32 || strings.Trim(n, "0123456789abcdef") != "" {
			t.Fatalf("nonces of one guard: %q", got)
		}
	}
	if !strings.Contains(a.Wrap("x"), "untrusted_input_"+got[0]) {
		t.Fatalf("Wrap does not use the guard's nonce %q: %q", got[0], a.Wrap("x"))
	}
	if b.Nonce() == got[0] {
		t.Fatalf("two guards share the nonce %q", got[0])
	}
}

// keyOrder is t's keys in the order next walks them (nil values skipped).
func keyOrder(t *lua.LTable) string {
	var out []string
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		out = append(out, fmt.Sprintf("%s:%s", k.Type(), k))
	}
	return strings.Join(out, ",")
}

// orderVandal changes the key order of its own globals every way Lua can:
// keys of every type added (a non-array number, a float, a boolean, a
// table, a function), template globals removed, set to nil and back, a
// global added and removed and added again, through _G, through a
// metatable's __newindex and while pairs walks _G; then it walks its
// globals with next, as a run would.
const orderVandal = `
_G[-1], _G[1.5], _G[true] = "n", "f", "b"
_G[{}], _G[print or tostring] = "t", "fn"
assert, pcall = nil, nil
tostring = nil; tostring = type
zz = 1; zz = nil; zz = 2
for k in pairs(_G) do _G["w_" .. type(k)] = 1 end
setmetatable(_G, {__newindex = function(t, k, v) end})
viameta = 1
local n = 0
for k in next, _G do n = n + 1 end
return (n > 0) and "yes" or "no"`

// TestGlobalsKeyOrderIsEachRunsOwn: the template's key order (shared by
// every VM until it adds a global) is what a fresh VM walks, in that
// order, however many VMs rewrote the order of their own globals at once
// on their own goroutines (the race detector sees a write to the shared
// order); and the template itself is unchanged.
func TestGlobalsKeyOrderIsEachRunsOwn(t *testing.T) {
	for _, kind := range []Kind{KindH1, KindSection} {
		tmpl := shared().globalsFor(kind).table
		wantTmpl := keyOrder(tmpl)
		_, _, tmplKeys, _ := tmpl.TableFields()
		fresh := func() string {
			vm := New(t.Context(), Options{Kind: kind, Host: &fakeHost{}})
			defer vm.Close()
			return keyOrder(vm.L.G.Global)
		}
		want := fresh()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() {
				vm := New(t.Context(), Options{Kind: kind, Host: &fakeHost{}})
				defer vm.Close()
				out, err := vm.RunChunk(chunk(t, "order", 1, orderVandal))
				if err != nil || out.Value != "yes" {
					errs <- fmt.Errorf("kind %d: %+v %v", kind, out, err)
				}
				// The run's own order kept what it added.
				if got := keyOrder(vm.L.G.Global); !strings.Contains(got, "string:zz") || !strings.Contains(got, "boolean:true") {
					errs <- fmt.Errorf("kind %d: a VM's own key order lost its additions: %s", kind, got)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := keyOrder(tmpl); got != wantTmpl {
			t.Fatalf("kind %d: the template's key order changed:\n%s\nwant\n%s", kind, got, wantTmpl)
		}
		if _, _, keys, _ := tmpl.TableFields(); keys != tmplKeys {
			t.Fatalf("kind %d: the template holds %d keys, had %d", kind, keys, tmplKeys)
		}
		if got := fresh(); got != want {
			t.Fatalf("kind %d: a fresh VM walks its globals as\n%s\nwant, as before the vandals:\n%s", kind, got, want)
		}
	}
}
