package luavm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
	"github.com/promptforge-go/promptforge/internal/store"
)

// Memory is one run's memory ceiling ([Limits.MaxRunMemory]), shared by
// every VM of the run (the H1's, each section entry's, every fanout arm's)
// and charged with the run's store. It is safe for concurrent use: fanout
// arms run their VMs in parallel.
//
// How it counts: the interpreter charges each VM's meter with what Lua
// grows (strings built by `..` and the string library, tables and their
// slots and keys, closures; see package lua's Meter), and every store
// write and append is checked before it happens. Charges never subtract
// garbage, so when a VM's charges would take the run past its ceiling, the
// VM measures what it still reaches (globals, value stack, call frames,
// and everything reachable from them) and carries on from that; only if
// what is reachable is itself over the ceiling does the run fail. A loop
// that builds and drops strings is thus never refused, while one that
// keeps them is, within one ceiling's worth of allocation.
type Memory struct {
	limit int64
	// held is what the run's open VMs hold: the sum of each VM's last
	// measurement plus what it was charged since. Closing a VM gives its
	// share back.
	held atomic.Int64
}

// NewMemory returns the ceiling of one run; limit <= 0 takes
// DefaultMaxRunMemory.
func NewMemory(limit int64) *Memory {
	if limit <= 0 {
		limit = DefaultMaxRunMemory
	}
	return &Memory{limit: limit}
}

// memSyncStep is how much a VM charges before it adds its charges to the
// run's total: adding on every charge would make each table slot an atomic
// operation. A run can thus be over its ceiling by this much per VM until
// the VM next syncs.
const memSyncStep = 256 << 10

// errMemory is the cancellation cause of a VM whose run is over its
// memory ceiling.
var errMemory = errors.New("lua memory limit exceeded")

// startMeter makes the interpreter count what this VM grows and the
// instructions it executes.
func (vm *VM) startMeter() {
	first := min(vm.limits.MaxInstructions, meterChunk)
	vm.stepsLeft = vm.limits.MaxInstructions - first
	vm.meter = &lua.Meter{Mark: memSyncStep, Owner: (*meterOwner)(vm), MaxStringBytes: vm.limits.MaxStringBytes,
		Steps: first}
	vm.L.SetMeter(vm.meter)
}

// meterOwner is the VM as its meter's lua.MeterOwner, which keeps Over and
// OutOfSteps out of the VM's exported methods.
type meterOwner VM

func (o *meterOwner) Over()       { (*VM)(o).memOver() }
func (o *meterOwner) OutOfSteps() { (*VM)(o).outOfSteps() }

// errInstructions is the cancellation cause of a VM past its instruction
// quota.
var errInstructions = errors.New("lua instruction quota exhausted")

// meterChunk is how many instructions the meter is handed at a time: the
// VM reads the clock between chunks (see budget), so no Lua loop runs more
// than this many instructions between two reads.
const meterChunk = 10_000

// outOfSteps runs when the meter's chunk of instructions is spent: it
// hands the meter the next chunk of the quota, the instruction under way
// being its first, after the clock checks; or, the quota spent, it ends
// the VM: like the time budget, through its context, so that pcall cannot
// swallow it. The interpreter calls it only while Lua runs, so the error
// is raised at once.
func (vm *VM) outOfSteps() {
	if vm.stepsLeft > 0 {
		n := min(vm.stepsLeft, meterChunk)
		vm.stepsLeft -= n
		vm.meter.Steps = n - 1
		vm.stopForTime()
		return
	}
	vm.cancel(errInstructions)
	vm.L.RaiseError("%s", vm.instructionsMsg())
}

func (vm *VM) instructionsMsg() string {
	return fmt.Sprintf(
		"lua instruction quota exceeded: Lua ran more than %d instructions in one section; make the Lua do less work (loop over less data, or leave the work to a model or a tool); the quota is fixed, as in the reference",
		vm.limits.MaxInstructions)
}

// stopMeter gives the VM's share of the run's memory back.
func (vm *VM) stopMeter() {
	vm.mem.held.Add(-vm.memHeld)
	vm.memHeld = 0
}

// memOver runs when the VM's charges pass their mark: it adds them to the
// run's total and, when the total is over the ceiling, replaces the VM's
// share by what it actually reaches; if that is still over, the run fails.
// It also reads the clock (see budget): a few instructions that each
// allocate megabytes pass their mark long before the meter's next chunk.
func (vm *VM) memOver() {
	if vm.budget.on {
		vm.stopForTime()
	}
	m := vm.meter
	vm.memHeld += m.Charged
	total := vm.mem.held.Add(m.Charged)
	m.Charged = 0
	free := vm.mem.limit - total - vm.storeSize()
	if free < 0 {
		measured := vm.measure()
		total = vm.mem.held.Add(measured - vm.memHeld)
		vm.memHeld = measured
		free = vm.mem.limit - total - vm.storeSize()
	}
	if free < 0 {
		// No further marks: the VM is done once this error lands.
		m.Mark = 1 << 62
		vm.overMemory(total + vm.storeSize())
		return
	}
	m.Mark = min(memSyncStep, free)
}

// checkStoreGrowth refuses a store change that would grow the store by
// grow bytes and so take the run past its ceiling, before the store changes.
func (vm *VM) checkStoreGrowth(st *store.Store, grow int64) {
	if grow <= 0 {
		return
	}
	over := func() bool { return vm.mem.held.Load()+st.Size()+grow > vm.mem.limit }
	if !over() {
		return
	}
	// Lua may hold garbage: measure what it reaches before refusing.
	vm.mem.held.Add(vm.meter.Charged)
	vm.memHeld += vm.meter.Charged
	vm.meter.Charged = 0
	measured := vm.measure()
	vm.mem.held.Add(measured - vm.memHeld)
	vm.memHeld = measured
	if over() {
		vm.overMemory(vm.mem.held.Load() + st.Size() + grow)
	}
}

func (vm *VM) storeSize() int64 {
	if vm.cfg.Store == nil {
		return 0
	}
	return vm.cfg.Store.Size()
}

// overMemory ends the VM: its context is cancelled with errMemory, so pcall
// cannot swallow the error (the interpreter stops at the next instruction),
// and, when Lua is running, the error is raised at once so that a library
// function growing a table stops too.
func (vm *VM) overMemory(total int64) {
	if vm.memFail == "" {
		vm.memFail = fmt.Sprintf(
			"lua memory limit exceeded: the run's Lua values and store would hold about %s, over its %s ceiling; keep less in tables, strings and the store (write results out as you go, drop what is no longer needed) or raise [limits].max_run_memory in prompts.toml",
			formatBytes(total), formatBytes(vm.mem.limit))
	}
	vm.cancel(errMemory)
	if vm.budget.on {
		vm.L.RaiseError("%s", vm.memFail)
	}
}

// formatBytes renders a byte count the way prompts.toml spells sizes.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// measure estimates what the VM's state reaches, with the costs the
// interpreter charges: its value stack, globals, registry and call frames,
// and every table, closure and string reachable from them. Tables the VM
// did not build (the shared libraries) are not counted, nor is var (it
// has its own bound) or anything held in Go. A string of 64 bytes or more
// reached twice is counted once.
func (vm *VM) measure() int64 {
	w := memWalk{seen: map[any]struct{}{}, strs: map[*byte]struct{}{}}
	vals := vm.L.Values()
	w.n = int64(cap(vals)) * lua.CostSlot
	w.push(vm.L.G.Global)
	w.push(vm.L.G.Registry)
	for _, v := range vals {
		w.push(v)
	}
	vm.L.Frames(func(f *lua.LFunction) { w.push(f) })
	w.run()
	return w.n
}

// memWalk is measure's traversal, iterative so that a deep structure
// cannot exhaust the Go stack.
type memWalk struct {
	n     int64
	seen  map[any]struct{}
	strs  map[*byte]struct{}
	stack []lua.LValue
}

func (w *memWalk) push(v lua.LValue) {
	if v != nil {
		w.stack = append(w.stack, v)
	}
}

func (w *memWalk) visit(key any) bool {
	if _, ok := w.seen[key]; ok {
		return false
	}
	w.seen[key] = struct{}{}
	return true
}

func (w *memWalk) run() {
	for len(w.stack) > 0 {
		v := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		switch x := v.(type) {
		case lua.LString:
			if len(x) >= 64 {
				p := unsafe.StringData(string(x))
				if _, ok := w.strs[p]; ok {
					continue
				}
				w.strs[p] = struct{}{}
			}
			w.n += lua.CostString + int64(len(x))
		case *lua.LTable:
			if x == nil {
				continue
			}
			_, acap, keys, metered := x.TableFields()
			if !metered || !w.visit(x) {
				continue
			}
			w.n += lua.CostTable + int64(acap)*lua.CostSlot + int64(keys)*lua.CostKey
			w.push(x.Metatable)
			x.ForEach(func(k, v lua.LValue) {
				w.push(k)
				w.push(v)
			})
		case *lua.LFunction:
			if x == nil || x.IsG || !w.visit(x) {
				continue
			}
			w.n += lua.CostFunction + int64(len(x.Upvalues))*lua.CostUpvalue
			w.push(x.Env)
			for _, uv := range x.Upvalues {
				if uv != nil {
					w.push(uv.Value())
				}
			}
		case *lua.LUserData:
			if x == nil || !w.visit(x) {
				continue
			}
			w.n += lua.CostTable
			w.push(x.Metatable)
		}
	}
}
