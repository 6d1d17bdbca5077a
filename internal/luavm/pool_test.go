package luavm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
	luaparse "github.com/yuin/gopher-lua/parse"

	"github.com/promptforge-go/promptforge/internal/prompt"
)

// observe is everything a new VM shows that an earlier run could have
// changed, from Go and from Lua: the globals' names, types, shared values
// and key order (pairs(_G) order is something prompts rely on), every
// library proxy's own entries, the string metatable and its entries, the
// metatables of the other types, what the value stack and the registry
// table hold, and the probe's view of the libraries. Two VMs made with
// the same options observe the same.
func observe(t testing.TB, vm *VM) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintln(&b, fingerprint(vm))
	fmt.Fprintln(&b, keyOrder(vm.L.G.Global))
	held := 0
	for _, v := range vm.L.Values() {
		if v != nil && v != lua.LNil {
			held++
		}
	}
	arr, hash, keys, _ := vm.L.G.Registry.TableFields()
	fmt.Fprintf(&b, "stack top %d, stack slots holding values %d, registry table %d/%d/%d\n", vm.L.GetTop(), held, arr, hash, keys)
	out, err := vm.RunChunk(chunk(t, "observe", 1, observeLua))
	if err != nil {
		// The observation itself must run: a failure here would make every
		// observation alike.
		t.Fatalf("observing a VM: %v", err)
	}
	fmt.Fprintln(&b, out)
	out, err = vm.RunChunk(chunk(t, "probe", 1, "local names = {}"+probe))
	fmt.Fprintln(&b, out, err)
	return b.String()
}

const observeLua = `
local out = {}
local function walk(name, t)
  local ks = {}
  for k, v in pairs(t) do ks[#ks + 1] = tostring(k) .. "=" .. type(v) end
  table.sort(ks)
  out[#out + 1] = name .. "{" .. table.concat(ks, ",") .. "}"
end
walk("string", string) walk("table", table) walk("math", math)
walk("store", store) walk("tools", tools) walk("models", models)
local mt = getmetatable("")
walk("stringmeta", mt)
out[#out + 1] = tostring(mt.__index == string) .. tostring(getmetatable(string)) .. tostring(getmetatable(_G))
for _, v in ipairs({1, true, print, function() end}) do out[#out + 1] = type(getmetatable(v)) end
out[#out + 1] = args .. "|" .. sys.section_name .. "|" .. tostring(reply) .. "|" .. type(var) .. "|" .. tostring(var.x)
out[#out + 1] = ("abc"):upper() .. string.format("%d", 7) .. math.floor(2.5) .. table.concat({"p", "q"}, "+")
return table.concat(out, "\n")`

// observeOpts are the options of every observed VM.
func observeOpts() Options {
	return Options{Kind: KindSection, Args: "the args", Sys: Sys{SectionName: "Observed", SectionCount: 1}}
}

// drained returns kind's template with its pool emptied, so that the next
// New of that kind makes a new state.
func drained(kind Kind) globals {
	g := shared().globalsFor(kind)
	for g.states.Get() != nil {
	}
	return g
}

// freshObservation is what a VM on a new state observes.
func freshObservation(t testing.TB) string {
	t.Helper()
	drained(KindSection)
	vm := New(context.Background(), observeOpts())
	defer vm.Close()
	return observe(t, vm)
}

// adversaries are chunks that change everything a run can reach and
// still end cleanly: their VMs' states are reused.
var adversaries = map[string]string{
	"vandal": vandal,
	"order":  orderVandal,
	"globals and libraries": `
x, y = 1, {}
string.x = "leak" table.y = print math.z = {} store.w = 1 tools.v = 2 models.u = 3
getmetatable("").__add = function() return "leak" end
getmetatable("").__index = {upper = function() return "leak" end}
_G[1], _G[2], _G[true], _G[2.5] = 1, 2, 3, 4
args, sys, var = nil, nil, nil
setmetatable(_G, {__index = function() return "leak" end})`,
	"values left on the stack": `
local a, b, c, d, e, f, g, h = {}, {}, "s", 1, 2, 3, print, function() return a end
local function deep(n) if n == 0 then return {n} end local t = {n} return deep(n - 1), t end
leak = deep(150)
local co = {pcall(error, {"caught"})}
local ok = pcall(function() local big = {} for i = 1, 200 do big[i] = i end error(big) end)
return nil`,
	"closures and upvalues": `
local secret = "leak"
function reader() return secret end
string.reader = function() return secret end
local t = setmetatable({}, {__index = function() return secret end})
getmetatable("").__index = t`,
	"jump": `jump("Elsewhere")`,
	// More writes than the global table's write log holds (lua's
	// maxWritten), the last past its end: Reset must then restore every
	// global, not only those logged.
	"write log overflow": `
for i = 1, 40 do local a, b = tonumber, tostring tonumber = a tostring = b end
assert = "leak"`,
}

// abnormal are runs that end abnormally, and one that ends cleanly but
// added more globals than a reset removes cheaply: their VMs' states must
// not be reused (and the next VM must still observe a fresh state).
var abnormal = map[string]struct {
	opts func(*Options)
	src  string
	ctx  func() context.Context
}{
	"lua error":  {src: `x = 1 string.x = 2 error("fails")`},
	"quota":      {opts: func(o *Options) { o.Limits.MaxInstructions = 1000 }, src: `x = 1 string.x = 2 while true do end`},
	"memory":     {opts: func(o *Options) { o.Limits.MaxRunMemory = 1 << 20 }, src: `x = {} for i = 1, 1e7 do x[i] = "s" .. i end`},
	"host panic": {opts: func(o *Options) { o.Host = &panicHost{} }, src: `x = 1 string.x = 2 list_from_section("Any")`},
	// pcall turns a Go panic into a Lua error the chunk can catch and then
	// end cleanly: the panic may have left the state half-changed all the
	// same.
	// A jump the chunk caught does not make a later error a jump.
	"error after a caught jump": {src: `pcall(jump, "Elsewhere") x = 1 string.x = 2 error("after")`},
	"host panic under pcall":    {opts: func(o *Options) { o.Host = &panicHost{} }, src: `x = 1 string.x = 2 pcall(list_from_section, "Any")`},
	"cancelled":                 {src: `x = 1 string.x = 2`, ctx: cancelledCtx},
	"error in fn":               {src: `local t = setmetatable({}, {__index = function() error("deep") end}) string.x = t.y`},
	"many globals":              {src: `for i = 1, 300 do _G["g" .. i] = i end`},
}

func cancelledCtx() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the test cancelled the run"))
	return ctx
}

// panicHost panics in a host call.
type panicHost struct{ fakeHost }

func (*panicHost) ListFromSection(string) ([]string, error) { panic("host bug") }

// usedState runs src in a VM made with opts and closes it, returning the
// state it ran on.
func usedState(t testing.TB, ctx context.Context, opts Options, c *prompt.Chunk) *lua.LState {
	vm := New(ctx, opts)
	L := vm.L
	func() {
		defer func() { _ = recover() }()
		vm.RunChunk(c)
	}()
	vm.Close()
	return L
}

// TestReusedStateIsFresh is the isolation of runs that share a state, one
// after the other: after each adversary, the next VM of the kind runs on
// the very state it used (so reuse is what is tested) and observes exactly
// what a VM on a new state does. Under the race detector sync.Pool drops
// some puts on purpose, hence the attempts.
func TestReusedStateIsFresh(t *testing.T) {
	want := freshObservation(t)
	for name, src := range adversaries {
		t.Run(name, func(t *testing.T) {
			c := chunk(t, name, 1, src)
			for attempt := 0; ; attempt++ {
				if attempt == 20 {
					t.Fatal("the state of a VM whose Lua ended cleanly was never reused")
				}
				drained(KindSection)
				opts := Options{Kind: KindSection, Host: &fakeHost{}, Args: "adversary's", Reply: new("adversary's reply"),
					Params: map[string]any{"p": 1}, HasItem: true, Item: "adversary's item"}
				used := usedState(t, context.Background(), opts, c)
				vm := New(context.Background(), observeOpts())
				reused := vm.L == used
				got := observe(t, vm)
				vm.Close()
				if !reused {
					continue
				}
				if got != want {
					t.Fatalf("a VM on the state %s used observes\n%s\nwant, as on a new state:\n%s", name, got, want)
				}
				return
			}
		})
	}
}

// TestAbnormalRunsStatesAreNotReused: a state whose Lua failed, panicked
// or was cut off is dropped, not reused.
func TestAbnormalRunsStatesAreNotReused(t *testing.T) {
	want := freshObservation(t)
	for name, tc := range abnormal {
		t.Run(name, func(t *testing.T) {
			drained(KindSection)
			opts := Options{Kind: KindSection, Host: &fakeHost{}}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			used := usedState(t, ctx, opts, chunk(t, name, 1, tc.src))
			vm := New(context.Background(), observeOpts())
			defer vm.Close()
			if vm.L == used {
				t.Fatalf("the state of a VM whose run ended abnormally (%s) was reused", name)
			}
			if got := observe(t, vm); got != want {
				t.Fatalf("after %s a new VM observes\n%s\nwant\n%s", name, got, want)
			}
		})
	}
}

// TestCleanRunsStatesAreReused: without reuse, every guarantee above
// holds trivially; this is the test that reuse happens at all (it fails
// if Close never gives a state back).
func TestCleanRunsStatesAreReused(t *testing.T) {
	c := chunk(t, "clean", 1, `local x = args .. "!" return x`)
	for attempt := 0; attempt < 20; attempt++ {
		drained(KindSection)
		used := usedState(t, context.Background(), Options{Kind: KindSection, Host: &fakeHost{}}, c)
		vm := New(context.Background(), Options{Kind: KindSection, Host: &fakeHost{}})
		reused := vm.L == used
		vm.Close()
		if reused {
			return
		}
	}
	t.Fatal("a clean VM's state was never reused")
}

// FuzzReusedStateIsFresh runs random chunks on a VM, then checks that the
// next VM observes what a VM on a new state does, whether or not the
// chunk's state was reused.
func FuzzReusedStateIsFresh(f *testing.F) {
	for _, src := range adversaries {
		f.Add(src)
	}
	for _, tc := range abnormal {
		f.Add(tc.src)
	}
	want := freshObservation(f)
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := luaparse.Parse(strings.NewReader(src), "fuzz")
		if err != nil {
			return
		}
		proto, err := lua.Compile(stmts, "fuzz")
		if err != nil {
			return
		}
		c := &prompt.Chunk{Name: "fuzz", Line: 1, Source: src, Proto: proto}
		opts := Options{Kind: KindSection, Host: &fakeHost{}, Args: "fuzz args",
			Limits: Limits{MaxInstructions: 100000, MaxRunMemory: 8 << 20, LuaTime: 200 * time.Millisecond}}
		drained(KindSection)
		usedState(t, context.Background(), opts, c)
		vm := New(context.Background(), observeOpts())
		defer vm.Close()
		if got := observe(t, vm); got != want {
			t.Fatalf("after %q a VM observes\n%s\nwant\n%s", src, got, want)
		}
	})
}

// TestPooledStateHoldsNoRunData: a state waiting in the pool holds none of
// its last run's data (args, var), only the template's values and the
// empty tables it keeps for its next VM: nothing of a run stays reachable
// from a state the run no longer uses.
func TestPooledStateHoldsNoRunData(t *testing.T) {
	c := chunk(t, "clean", 1, `var.secret = "the run's var"
string.secret, math.secret, table.secret, store.secret, tools.secret, models.secret = {args}, {args}, {args}, {args}, {args}, {args}
getmetatable("").__index = {secret = args}
return args`)
	for attempt := 0; attempt < 20; attempt++ {
		g := drained(KindSection)
		usedState(t, context.Background(), Options{Kind: KindSection, Host: &fakeHost{}, Args: "the run's args"}, c)
		st, ok := g.states.Get().(*pooledState)
		if !ok {
			continue // the race detector's sync.Pool drops puts at random
		}
		kept := map[lua.LValue]bool{st.L.G.Global: true}
		for _, tb := range st.tables {
			if tb != nil {
				kept[tb] = true
			}
		}
		g.table.ForEach(func(k, want lua.LValue) {
			if got := st.L.G.Global.RawGet(k); got != want && !kept[got] {
				t.Errorf("a pooled state's global %v holds %v (%s), not the template's %v", k, got, got.Type(), want)
			}
		})
		// The tables it keeps for its next VM hold nothing of this run.
		for i, tb := range st.tables {
			if tb != nil {
				tb.ForEach(func(k, v lua.LValue) { t.Errorf("a pooled state's kept table %d holds %v = %v", i, k, v) })
			}
		}
		if m := st.strMeta; m != nil {
			m.ForEach(func(k, v lua.LValue) {
				if k != lua.LString("__index") || v != st.tables[tableString] || v == nil {
					t.Errorf("a pooled state's kept string metatable holds %v = %v", k, v)
				}
			})
		}
		st.L.Close()
		return
	}
	t.Fatal("a clean VM's state was never pooled")
}

// TestCaughtFatalErrorTaintsState: an error that ends the chunk even
// under pcall (vm.fatal: jump while the shared library loads, a fanout
// write race) still marks the state unfit for reuse when Lua caught it
// and a later chunk on the same VM (which clears vm.fatal) ends cleanly.
func TestCaughtFatalErrorTaintsState(t *testing.T) {
	drained(KindSection)
	vm := New(context.Background(), Options{Kind: KindSection, Host: &fakeHost{}})
	used := vm.L
	if err := vm.RunShared(chunk(t, "shared", 1, `x = 1 string.x = 2 pcall(jump, "Elsewhere")`)); err == nil {
		t.Fatal("jump during the shared library load did not fail")
	}
	if _, err := vm.RunChunk(chunk(t, "clean", 1, `return 1`)); err != nil {
		t.Fatal(err)
	}
	vm.Close()
	next := New(context.Background(), observeOpts())
	defer next.Close()
	if next.L == used {
		t.Fatal("the state of a VM whose Lua caught a fatal error was reused")
	}
}

// TestCloseTwiceGivesStateOnce: Close is safe to call twice (vm.go), so
// the second call must not give the state to the pool again: two VMs
// would then share it.
func TestCloseTwiceGivesStateOnce(t *testing.T) {
	c := chunk(t, "clean", 1, `return args`)
	for attempt := 0; attempt < 20; attempt++ {
		g := drained(KindSection)
		vm := New(context.Background(), Options{Kind: KindSection, Host: &fakeHost{}})
		if _, err := vm.RunChunk(c); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		vm.Close()
		a, _ := g.states.Get().(*pooledState)
		if a == nil {
			continue // the race detector's sync.Pool drops puts at random
		}
		b, _ := g.states.Get().(*pooledState)
		if a == b {
			t.Fatal("a VM closed twice gave its state to the pool twice")
		}
		return
	}
	t.Fatal("a clean VM's state was never pooled")
}

// TestStateOfOtherBoundsIsNotReused: a VM takes a pooled state only if
// the state was made with the VM's own call stack and registry bounds
// (pool.go): a state made for a deeper call stack or a larger value stack
// would give the VM more than its limits allow.
func TestStateOfOtherBoundsIsNotReused(t *testing.T) {
	c := chunk(t, "clean", 1, `return args`)
	for name, lim := range map[string]Limits{
		"call stack": {CallStackSize: DefaultCallStackSize / 2},
		"registry":   {RegistryMaxSize: DefaultRegistryMaxSize / 2},
	} {
		t.Run(name, func(t *testing.T) {
			for attempt := 0; attempt < 5; attempt++ {
				drained(KindSection)
				used := usedState(t, context.Background(), Options{Kind: KindSection, Host: &fakeHost{}}, c)
				vm := New(context.Background(), Options{Kind: KindSection, Host: &fakeHost{}, Limits: lim})
				reused := vm.L == used
				vm.Close()
				if reused {
					t.Fatalf("a VM with limits %+v took a state made with the default bounds", lim)
				}
			}
		})
	}
}
