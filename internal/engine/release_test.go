package engine

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"unsafe"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// A section whose last block is prose gives its Lua VM back before that
// block's model turn: nothing runs in it after. With runs held in their
// turn, each holds about a VM less than the same section ending with a
// Lua block, which must keep its VM through the turn. Both answer alike.
func TestSectionVMReleasedForItsLastTurn(t *testing.T) {
	const runs = 100
	perRun := func(body string) uint64 {
		t.Helper()
		g := newGW(t)
		gate := gatewaytest.NewGate()
		g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Gated(gate, gatewaytest.Text("hello")) })
		p := parse(t, body)
		cfg := g.cfg()
		before := liveHeap()
		results := make([]result, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() {
				res, err := Run(context.Background(), p, "", nil, cfg)
				results[i] = result{Result: res, err: err}
			})
		}
		<-gate.ArrivedN(runs)
		during := liveHeap()
		gate.Release()
		wg.Wait()
		for _, r := range results {
			r.ok(t, "hello")
		}
		return (during - min(before, during)) / runs
	}
	section := header + "# T\n\n" + defaultModel + "\n## Run\n\n" + lua(`local greeting = "hello"`) + "\nSay {{ args }}.\n"
	released := perRun(section)
	kept := perRun(section + "\n" + lua(`local after = 1`))
	// A section VM is about 7 KB live since VMs copy a template global
	// table (luavm/lua doc.go); an extra Lua block alone adds far less.
	if released+4<<10 > kept {
		t.Errorf("a run waiting in its section's last turn holds %d bytes, one whose section has Lua after the turn %d: the VM was not released", released, kept)
	}
}

// liveHeap is the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A section of prose alone (no Lua block, no template, no shared library)
// never makes its Lua VM: nothing would run in it. The same section whose
// prose reads a template makes one for the substitution (and releases it
// before the turn), so it allocates a VM's worth more per run; both answer
// alike, and the reply and finish reason of an earlier turn still reach a
// later Lua block (the VM made late gets them).
func TestProseSectionMakesNoVM(t *testing.T) {
	allocs := func(body, want string) float64 {
		t.Helper()
		g := newGW(t)
		g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("hello") })
		p := parse(t, body)
		cfg := g.cfg()
		return testing.AllocsPerRun(50, func() {
			res, err := Run(context.Background(), p, "x", nil, cfg)
			result{Result: res, err: err}.ok(t, want)
		})
	}
	section := header + "# T\n\n" + defaultModel + "\n## Run\n\n"
	plain := allocs(section+"Say hello.\n", "hello")
	templated := allocs(section+"Say {{ args }}.\n", "hello")
	// A section VM is about 24 allocations per run here (it was 50 before
	// luavm reused states, pool.go): a prose-only section that made one
	// allocates within a few of the templated one, one that makes none
	// about 27 fewer.
	if plain+12 > templated {
		t.Errorf("a prose-only section allocates %.0f objects per run, one whose prose reads a template %.0f: the prose-only section made a VM", plain, templated)
	}
	// Made after two turns, the VM has the reply and the finish reason.
	allocs(section+"Say hello.\n\nAgain.\n\n"+lua(`return reply .. " " .. sys.reply_finish_reason`), "hello stop")
}

// The scope of prose without tools is one allocation: a run holds it
// through its model turn. Its maps come with its first tools.
func TestAScopeWithoutToolsIsOneAllocation(t *testing.T) {
	var kept *scope // escapes, as the turn's scope does
	if allocs := testing.AllocsPerRun(100, func() { kept = newScope() }); allocs != 1 || kept == nil {
		t.Fatalf("an empty scope takes %v allocations, want 1", allocs)
	}
}

// A VM made late has its globals in the order the VM made at the
// section's start would have had them: a reply bound by an earlier turn
// of the section, when the section started without one, comes after the
// alias globals (luavm.New: "in the order prompts may rely on"), as
// SetReply added it there. A shared library makes the VM at the start,
// which is the order to match.
func TestLateVMKeepsTheGlobalsOrder(t *testing.T) {
	probe := lua(`local n = {}
for k in pairs(_G) do n[#n + 1] = tostring(k) end
return table.concat(n, ",")`)
	order := func(shared string) string {
		t.Helper()
		g := newGW(t)
		g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("hello") })
		p := parse(t, "# T\n\n"+shared+defaultModel+"\n## Run\n\nSay hello.\n\n"+probe)
		r := runP(t, p, "x", g.cfg())
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.Value
	}
	late, early := order(""), order("```lua shared\nlocal _ = 1\n```\n")
	if late != early {
		t.Fatalf("the globals of a VM made after the turn:\n%s\nmade at the section's start:\n%s", late, early)
	}
}

// A run's state is held by every run in flight for its whole wait at the
// gateway. With the 8-byte type header the allocator puts before an
// object over 512 bytes that holds pointers, 696 bytes fill the 704-byte
// size class; 8 more take the next, 768, and cost every waiting run 64.
func TestRunFitsASmallSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(run{}); size > 696 {
		t.Fatalf("a run is %d bytes; keep it within 696 (see its doc)", size)
	}
}
