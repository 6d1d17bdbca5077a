package luavm

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/store"
)

// clockHost is a fakeHost whose list_from_section ends the VM's
// speculative attempt's time, as the clock would pass SpeculateUntil in
// the middle of a chunk: the chunk-start check has passed by then, so only
// the checks inside the chunk can stop it. No sleeping.
type clockHost struct {
	*fakeHost
	vm *VM
}

func (h *clockHost) ListFromSection(target string) ([]string, error) {
	h.vm.cfg.SpeculateUntil = time.Now().Add(-time.Second)
	return h.fakeHost.ListFromSection(target)
}

// speculativeVM is a section VM whose attempt's time ends when its Lua
// calls list_from_section.
func speculativeVM(t *testing.T, lim Limits) (*VM, *fakeHost) {
	t.Helper()
	fh := &fakeHost{}
	h := &clockHost{fakeHost: fh}
	vm := New(context.Background(), Options{Kind: KindSection, Host: h, Store: store.New(), Limits: lim,
		SpeculateUntil: time.Now().Add(time.Hour)})
	h.vm = vm
	t.Cleanup(vm.Close)
	return vm, fh
}

func mustStop(t *testing.T, vm *VM, src string) {
	t.Helper()
	out, err := vm.RunChunk(chunk(t, "section `Run` prologue", 10, src))
	if !errors.Is(err, ErrSpeculationStopped) {
		t.Fatalf("run %q = %+v, %v; want the speculation stop", src, out, err)
	}
	var ce *CancelledError
	if !errors.As(err, &ce) {
		t.Fatalf("the stop is a %T, want a *CancelledError", err)
	}
	if vm.reusable() {
		t.Fatal("a VM whose attempt stopped would go back to the pool")
	}
}

func TestSpeculation_LuaOnlyRunsAsUsual(t *testing.T) {
	const src = `local t = {} for i = 1, 50000 do t[#t+1] = i % 7 end
local s = table.concat(t, ","):gsub("%d", "x")
var.n = #s; store.write("f", "ok")
return #s .. " " .. string.rep("ab", 3)`
	var want string
	for _, until := range []time.Time{{}, time.Now().Add(time.Hour)} {
		e := newEnv(t, Options{SpeculateUntil: until})
		out, err := e.run(t, src)
		if err != nil || !out.Returned {
			t.Fatalf("SpeculateUntil %v: %+v %v", until, out, err)
		}
		if want == "" {
			want = out.Value
		} else if out.Value != want {
			t.Fatalf("under speculation %q, ordinary %q", out.Value, want)
		}
		if !e.vm.reusable() {
			t.Fatal("a VM that completed its attempt is not pooled")
		}
	}
}

// Every binding that waits on the host stops the attempt before the host
// is called, even under pcall; the fake host records the calls it gets.
func TestSpeculation_StopsBeforeHostWaits(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		src  string
	}{
		{KindH1, `models.need("writer", "A model")`},
		{KindH1, `models.default("writer", "A model")`},
		{KindH1, `tools.need("search", "Search the web")`},
		{KindSection, `models.infer("hi")`},
		{KindSection, `models.get("writer"):infer("hi")`},
		{KindSection, `fanout("## W", {1, 2})`},
		{KindH1, `pcall(models.need, "writer", "A model")`},
		{KindSection, `pcall(models.infer, "hi")`},
		{KindSection, `for i = 1, 3 do pcall(fanout, "## W", {1}) end`},
	} {
		t.Run(tc.src, func(t *testing.T) {
			e := newEnv(t, Options{Kind: tc.kind, SpeculateUntil: time.Now().Add(time.Hour)})
			mustStop(t, e.vm, tc.src+` return "reached"`)
			if len(e.host.inferred) > 0 {
				t.Fatalf("the host was asked to infer: %q", e.host.inferred)
			}
		})
	}
}

// execute runs inline: its chain is the host's, in the same run.
func TestSpeculation_ExecuteRunsInline(t *testing.T) {
	e := newEnv(t, Options{SpeculateUntil: time.Now().Add(time.Hour)})
	mustReturn(t, e, `return execute("## Sub")`, "executed ## Sub")
}

// A chain whose own attempt stopped stops its caller too, pcall or not.
func TestSpeculation_ChainStopStopsCaller(t *testing.T) {
	e := newEnv(t, Options{SpeculateUntil: time.Now().Add(time.Hour)})
	e.vm.host = &stoppingHost{fakeHost: e.host}
	mustStop(t, e.vm, `pcall(execute, "## Sub") return "reached"`)
}

type stoppingHost struct{ *fakeHost }

func (h *stoppingHost) Execute(ctx context.Context, target string, input *string) (string, error) {
	return "", &CancelledError{Cause: ErrSpeculationStopped}
}

// A loop stops within a meter chunk once the clock passes SpeculateUntil:
// well before its instruction quota, which would end it otherwise.
func TestSpeculation_LongLoopStopsPastDeadline(t *testing.T) {
	vm, _ := speculativeVM(t, Limits{MaxInstructions: 5_000_000, LuaTime: time.Hour})
	mustStop(t, vm, `list_from_section("## L") local x = 0 while true do x = x + 1 end`)
	// pcall cannot catch it either.
	vm, _ = speculativeVM(t, Limits{MaxInstructions: 5_000_000, LuaTime: time.Hour})
	mustStop(t, vm, `list_from_section("## L") while true do pcall(function() for i = 1, 1e9 do end end) end`)
}

// A pattern search polls the state's context, which reads the clock. The
// search runs no instructions, so the meter's checks cannot stop it.
func TestSpeculation_PatternSearchStopsPastDeadline(t *testing.T) {
	vm, _ := speculativeVM(t, Limits{LuaTime: time.Hour})
	mustStop(t, vm, `list_from_section("## L")
local s = string.rep("a", 2000)
local found = string.find(s, "a-b") -- about 2 million matcher steps
return "finished"`)
}

// A chunk that starts past SpeculateUntil does not run.
func TestSpeculation_ChunkPastDeadlineDoesNotRun(t *testing.T) {
	e := newEnv(t, Options{SpeculateUntil: time.Now().Add(-time.Second)})
	mustStop(t, e.vm, `store.write("ran", "yes") return "reached"`)
	if names, _ := e.st.Glob("*"); len(names) != 0 {
		t.Fatalf("the chunk ran: %v", names)
	}
}

// The meter's chunks add up to the quota exactly: the quota error comes
// at the same instruction as when the meter had it whole.
func TestInstructionQuotaExactAcrossMeterChunks(t *testing.T) {
	for _, quota := range []int64{meterChunk - 1, meterChunk, meterChunk + 1, 3*meterChunk + 17} {
		// Each iteration of `for i = 1, n do end` is one FORLOOP; the
		// chunk's fixed instructions are measured with n = 0.
		count := func(n int64) (ok bool) {
			e := newEnv(t, Options{Limits: Limits{MaxInstructions: quota, LuaTime: time.Hour}})
			_, err := e.run(t, `for i = 1, `+strconv.FormatInt(n, 10)+` do end`)
			if err != nil && !strings.Contains(err.Error(), "lua instruction quota exceeded") {
				t.Fatal(err)
			}
			return err == nil
		}
		lo, hi := int64(0), quota+1 // count(lo) holds, count(hi) does not
		if !count(lo) || count(hi) {
			t.Fatalf("quota %d: bounds", quota)
		}
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; count(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		// The same constant for every quota, those below a chunk (which
		// the meter is handed whole, as before chunks) included: for
		// i = 1, n is 3 loads, FORPREP, n+1 FORLOOPs, then RETURN.
		if got := lo + 6; got != quota {
			t.Errorf("quota %d: the longest loop that fits runs %d instructions", quota, got)
		}
	}
}

// A few instructions that each allocate megabytes pass the meter's memory
// mark long before its next chunk of instructions: the clock is read
// there too.
func TestSpeculation_BigAllocationsStopPastDeadline(t *testing.T) {
	vm, _ := speculativeVM(t, Limits{LuaTime: time.Hour})
	mustStop(t, vm, `list_from_section("## L") local s = string.rep("x", 1e6) local t = s .. "y" return "finished"`)
}

// gsub and gmatch search once per match, and a search's entry poll reads
// the clock only on every findClockEvery-th search (a read per match cost
// a gsub of short matches much of its time): past the deadline, the
// searches before that one go on, and it stops the attempt. Many short
// matches, none long enough for the matcher's step polls, still stop.
func TestSpeculation_PatternSearchesShareClockReads(t *testing.T) {
	vm, _ := speculativeVM(t, Limits{LuaTime: time.Hour})
	mustStop(t, vm, `list_from_section("## L") for i = 1, 100 do string.find("ab", "b+") n = i end return "finished"`)
	if n := vm.L.G.Global.RawGetString("n"); n.String() != strconv.Itoa(findClockEvery-1) {
		t.Fatalf("%s searches went on past the deadline, want %d", n, findClockEvery-1)
	}
	vm, _ = speculativeVM(t, Limits{LuaTime: time.Hour})
	mustStop(t, vm, `list_from_section("## L") local s = string.gsub(string.rep("ab", 1000), "b", "") return "finished"`)
}
