package luavm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"

	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
)

// Kind is what a VM runs.
type Kind uint8

const (
	// KindH1 runs the H1 blocks once per run, with live tools/models
	// resolution and control globals that refuse to run.
	KindH1 Kind = iota + 1
	// KindSection runs one section entry (walk, chain or arm).
	KindSection
)

// Sys holds the sealed sys fields fixed when a VM is built.
type Sys struct {
	When         string // RFC 3339 UTC
	Now          string // RFC 3339 UTC
	ID           int
	SectionName  string
	Execution    string
	SectionCount int
	// Index is the 1-based position of a fanout arm; 0 elsewhere, where
	// sys.index does not exist.
	Index int
}

// Options describes one VM.
type Options struct {
	Kind  Kind
	Host  Host
	Store *store.Store
	Guard *Guard
	Args  string
	// Params are the run's typed arguments (prompt-language §2.1), bound
	// as the global table params; nil for a prompt that declares none,
	// which then has no params global at all, exactly as before.
	Params map[string]any
	Sys    Sys
	Var    *Var    // nil: a fresh empty var
	Reply  *string // incoming reply; nil when there is none
	Limits Limits
	// Item is the fanout member of an arm (HasItem true).
	Item    any
	HasItem bool
	// Writer tags store.write calls for the store's fanout write-race
	// check. It is set for fanout arms only; the zero Writer is untracked.
	Writer store.Writer
	// Memory is the run's memory ceiling, shared by all its VMs; nil
	// gives this VM a ceiling of its own (Limits.MaxRunMemory).
	Memory *Memory
	// SpeculateUntil, when set, makes the VM's Lua a speculative attempt
	// (see speculate.go): it stops with ErrSpeculationStopped before any
	// host call that waits (all but execute), and once the clock passes
	// SpeculateUntil. The zero time is an ordinary VM.
	SpeculateUntil time.Time
}

// VM is one sandboxed Lua state and the host globals bound into it. It is
// not safe for concurrent use: one section runs on one goroutine.
type VM struct {
	L    *lua.LState
	st   *pooledState // L and what it was made with; nil once closed
	tmpl globals      // the template L's globals were copied from
	// inLua counts the calls into Lua under way, and tainted is set once
	// one failed: Close reuses the state only if neither (reusable).
	inLua   int
	tainted bool
	cfg     Options
	limits  Limits
	host    Host
	lib     *sharedLib // shared(), fetched once in New

	// ctx is the context the VM was built under (the run's, or a fanout
	// arm's). The VM holds it because gopher-lua calls the bindings as
	// func(*lua.LState) int, with no way to pass a context: the bindings
	// that wait on the host (tools.need, models.infer, execute, fanout,
	// ...) hand it on from here. The state's own context (luaCtx) cannot
	// serve, since the time budget cancels it and host waits do not count
	// against the budget.
	ctx    context.Context
	luaCtx context.Context // ctx, also cancelled when the time budget runs out
	vmCtx  vmContext       // the state's context: luaCtx and this VM
	cancel context.CancelCauseFunc
	budget budget

	// The run's memory ceiling (memory.go): the meter the interpreter
	// charges, this VM's share of the run's total, and the error once the
	// run is over it.
	mem     *Memory
	meter   *lua.Meter // not a field by value: see Close
	memHeld int64
	memFail string
	// stepsLeft is the part of the instruction quota not yet handed to
	// the meter, which gets it in chunks (outOfSteps).
	stepsLeft int64

	sys sysState

	varRoot  *Var
	varUD    *lua.LUserData
	proxies  map[*Table]*lua.LUserData
	logCount int
	logBytes int

	phase  phase
	jumpTo any
	jumped bool
	fatal  error
	locals map[string]*lua.LFunction
}

// pcall calls the function under nargs arguments on the stack for one
// result, and keeps the count that tells Close whether the state is fit
// for reuse: every call returned (no Go panic escaped through it), and
// none failed other than by jump, nor raised a fatal error.
func (vm *VM) pcall(nargs int) error {
	vm.inLua++
	err := vm.L.PCall(nargs, 1, nil)
	vm.inLua--
	// vm.fatal too: such an error ends the chunk even when Lua caught it,
	// and a later chunk or local tool call clears it before Close looks.
	if err != nil && !isJump(err) || vm.fatal != nil {
		vm.tainted = true
	}
	return err
}

// isJump reports whether err is jump's unwinding. Not vm.jumped: a chunk
// can catch jump with pcall and then fail with an error of its own.
func isJump(err error) bool {
	var api *lua.ApiError
	if !errors.As(err, &api) {
		return false
	}
	ud, ok := api.Object.(*lua.LUserData)
	if !ok {
		return false
	}
	_, ok = ud.Value.(*jumpSignal)
	return ok
}

// reusable reports whether the VM's state may serve another VM: its Lua
// never failed, panicked or was cut off (quota, memory ceiling, time
// budget, cancellation), so it unwound normally; Reset then checks the
// state itself is at rest. It must be asked before Close cancels luaCtx.
func (vm *VM) reusable() bool {
	return !vm.tainted && vm.inLua == 0 && vm.fatal == nil && vm.memFail == "" &&
		vm.ctx.Err() == nil && vm.luaCtx.Err() == nil
}

type phase uint8

const (
	phaseBlocks phase = iota
	phaseShared
	phaseLocalTool
)

// Var is a walk's JSON clipboard. Sections of one walk share it; execute
// chains and fanout arms get a Clone.
type Var struct {
	root *Table
	// size is root's size estimate (see measure), kept current by every
	// write so that bounding var costs nothing per assignment.
	size int
}

// NewVar returns an empty var.
func NewVar() *Var { return &Var{root: &Table{}, size: containerCost} }

// Clone deep-copies v.
func (v *Var) Clone() *Var { return &Var{root: CloneData(v.root).(*Table), size: v.size} }

// JSON renders v as compact JSON (for diagnostics and tests).
func (v *Var) JSON() string {
	s, err := RenderData(v.root)
	if err != nil {
		return "{}"
	}
	return s
}

// Lookup returns the value at the dotted key path, and whether it exists.
func (v *Var) Lookup(keys ...string) (any, bool) {
	var cur any = v.root
	for _, k := range keys {
		t, ok := cur.(*Table)
		if !ok || t.Hash == nil {
			return nil, false
		}
		cur, ok = t.Hash[k]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// New builds a VM: the sandbox, then the host values, log, store and the
// control globals, in the order prompts may rely on (the shared library
// replay and alias globals come after, from RunShared and InstallAliases).
func New(ctx context.Context, cfg Options) *VM {
	lim := cfg.Limits.WithDefaults()
	sh := shared()
	tmpl := sh.globalsFor(cfg.Kind)
	st := tmpl.state(lim)
	L := st.L
	vm := &VM{L: L, st: st, tmpl: tmpl, cfg: cfg, limits: lim, host: cfg.Host, lib: sh, ctx: ctx}
	vm.luaCtx, vm.cancel = context.WithCancelCause(ctx)
	vm.budget = budget{left: lim.LuaTime, cancel: vm.cancel}
	vm.vmCtx = vmContext{Context: vm.luaCtx, vm: vm}
	L.SetContext(&vm.vmCtx)
	vm.mem = cfg.Memory
	if vm.mem == nil {
		vm.mem = NewMemory(lim.MaxRunMemory)
	}
	vm.startMeter()
	// The globals the template copied, charged as if set one by one.
	vm.meter.Charge(tmpl.cost)
	vm.openSandbox(sh)

	vm.sys = sysState{Sys: cfg.Sys}
	vm.varRoot = cfg.Var
	if vm.varRoot == nil {
		vm.varRoot = NewVar()
	}
	// Every global of perVM is set here: the template holds placeholders.
	// SetOwned, because a reused state's Reset leaves these to New: most
	// hold the same value from one VM to the next (the reused proxies),
	// and then cost a lookup instead of two writes. args and var hold the
	// run's data: put gives them their placeholders back before it pools
	// the state.
	g := L.G.Global
	g.SetOwned("args", lua.LString(cfg.Args))
	g.SetOwned("sys", vm.newSys())
	vm.varUD = vm.proxy(vm.varRoot.root, "var")
	g.SetOwned("var", vm.varUD)
	g.SetOwned("store", vm.st.table(tableStore, sh.storeProxy, 0))
	if cfg.Kind == KindH1 {
		vm.InstallH1Tables()
	} else {
		vm.installSectionTables(sh)
	}
	if cfg.Params != nil {
		// A fresh table per VM: a section that changes params changes
		// only its own copy, as with args.
		g.RawSetString("params", vm.FromData(cfg.Params))
	}
	if cfg.Reply != nil {
		g.RawSetString("reply", lua.LString(*cfg.Reply))
	}
	if cfg.HasItem {
		g.RawSetString("item", vm.FromData(cfg.Item))
	}
	return vm
}

// Close releases the VM. It is safe to call twice. A VM whose Lua all
// ran to a clean finish gives its state back for the next VM of its kind
// (see pool.go); the VM must not be used after Close.
func (vm *VM) Close() {
	if vm.st == nil {
		return
	}
	vm.budget.stop()
	vm.stopMeter()
	reuse := vm.reusable()
	vm.cancel(nil)
	if !reuse || !vm.tmpl.put(vm.st) {
		vm.L.Close()
	}
	// The state may now be another VM's: nothing of this one may reach it.
	vm.L, vm.st = nil, nil
	// Every table the VM made points at its meter, and a table can outlive
	// the VM (the H1's globals did, through a stale call frame of a pooled
	// segment, lua's freeCallFrameStackSegment, for each section's model
	// turn; with the meter a field of the VM that kept the whole H1 state:
	// about 17 KB per run in flight). The meter is its own allocation, and
	// once closed it counts nothing and refers to nothing, so a table that
	// outlives the VM keeps only itself.
	vm.meter.Mark, vm.meter.Owner = math.MaxInt64, nil
}

// Outcome is how a chunk ended.
type Outcome struct {
	// Returned is set when the chunk returned a scalar; Value is its text.
	Returned bool
	Value    string
	// Jumped is set when the chunk called jump; Target is the host's token.
	Jumped bool
	Target any
}

// RunChunk runs one compiled block. Only the first top-level return value
// matters: nil continues, a scalar ends the section, anything else fails.
func (vm *VM) RunChunk(c *prompt.Chunk) (Outcome, error) {
	vm.phase = phaseBlocks
	return vm.runProto(c)
}

// RunShared replays the shared library (c may be nil: nothing to replay).
// Its scalar return is discarded; jump is a hard error.
func (vm *VM) RunShared(c *prompt.Chunk) error {
	if c == nil {
		return nil
	}
	vm.phase = phaseShared
	defer func() { vm.phase = phaseBlocks }()
	_, err := vm.runProto(c)
	return err
}

func (vm *VM) runProto(c *prompt.Chunk) (Outcome, error) {
	L := vm.L
	vm.jumped, vm.jumpTo, vm.fatal = false, nil, nil
	// A jump loop of tiny sections runs few instructions per VM: the
	// attempt's clock is also read at each chunk.
	if vm.speculationOver() {
		vm.cancel(ErrSpeculationStopped)
		return Outcome{}, vm.interrupted()
	}
	fn := L.NewFunctionFromProto(c.Proto)
	L.Push(fn)
	prev := vm.budget.set(true)
	err := vm.pcall(0)
	vm.budget.set(prev)
	if err != nil {
		if cerr := vm.interrupted(); cerr != nil {
			return Outcome{}, cerr
		}
		if vm.fatal != nil {
			return Outcome{}, vm.fatal
		}
		if vm.jumped {
			return Outcome{Jumped: true, Target: vm.jumpTo}, nil
		}
		return Outcome{}, vm.translate(err)
	}
	ret := L.Get(-1)
	L.Pop(1)
	if cerr := vm.interrupted(); cerr != nil {
		return Outcome{}, cerr
	}
	if vm.fatal != nil {
		return Outcome{}, vm.fatal
	}
	if vm.jumped {
		return Outcome{Jumped: true, Target: vm.jumpTo}, nil
	}
	s, ok, err := scalarResult(ret)
	if err != nil {
		return Outcome{}, &LuaError{Msg: c.Name + ": " + err.Error()}
	}
	if !ok {
		return Outcome{}, nil
	}
	return Outcome{Returned: true, Value: s}, nil
}

// scalarResult converts a returned value: nil → not returned; scalars →
// text; anything else is an error.
func scalarResult(v lua.LValue) (string, bool, error) {
	switch x := v.(type) {
	case *lua.LNilType:
		return "", false, nil
	case lua.LString:
		return string(x), true, nil
	case lua.LNumber:
		return FormatNumber(float64(x)), true, nil
	case lua.LBool:
		if x {
			return "true", true, nil
		}
		return "false", true, nil
	}
	return "", false, fmt.Errorf("cannot return a %s as a result", luaTypeName(v))
}

func luaTypeName(v lua.LValue) string {
	if ud, ok := v.(*lua.LUserData); ok {
		if _, ok := ud.Value.(*varRef); ok {
			return "table"
		}
	}
	return v.Type().String()
}

// interrupted reports cancellation of the run or exhaustion of the time
// budget, which win over whatever error Lua saw while unwinding.
func (vm *VM) interrupted() error {
	if vm.ctx.Err() != nil {
		return &CancelledError{Cause: context.Cause(vm.ctx)}
	}
	if vm.luaCtx.Err() != nil && errors.Is(context.Cause(vm.luaCtx), ErrSpeculationStopped) {
		return &CancelledError{Cause: ErrSpeculationStopped}
	}
	if vm.luaCtx.Err() != nil && errors.Is(context.Cause(vm.luaCtx), errMemory) {
		return &QuotaError{Msg: vm.memFail}
	}
	if vm.luaCtx.Err() != nil && errors.Is(context.Cause(vm.luaCtx), errInstructions) {
		return &QuotaError{Msg: vm.instructionsMsg()}
	}
	if vm.luaCtx.Err() != nil && errors.Is(context.Cause(vm.luaCtx), errBudget) {
		return &QuotaError{Msg: fmt.Sprintf(
			"lua time quota exceeded: Lua ran for more than %s in one section (the time budget bounds what the instruction quota does not count, such as pattern matching and library calls); make the Lua finish sooner; the budget is fixed, and waits on models and tools do not count",
			vm.limits.LuaTime)}
	}
	return nil
}

// translate turns a PCall error into the error the run reports.
func (vm *VM) translate(err error) error {
	var api *lua.ApiError
	if !errors.As(err, &api) {
		return &LuaError{Msg: err.Error()}
	}
	switch obj := api.Object.(type) {
	case *lua.LUserData:
		switch v := obj.Value.(type) {
		case *hostError:
			return v.err
		case *jumpSignal:
			return &LuaError{Msg: "jump was raised outside a chunk"}
		}
	case lua.LString:
		return &LuaError{Msg: string(obj)}
	case *lua.LNilType:
		return &LuaError{Msg: "lua error (error object is nil)"}
	}
	if api.Object != nil {
		return &LuaError{Msg: fmt.Sprintf("lua error (error object is a %s value)", api.Object.Type())}
	}
	return &LuaError{Msg: api.Error()}
}

// raise raises err in Lua: a ScriptError as a positioned Lua error, any
// other error as an error object carrying it.
func (vm *VM) raise(err error) {
	var se *ScriptError
	if errors.As(err, &se) {
		vm.L.RaiseError("%s", se.Msg)
		return
	}
	ud := vm.L.NewUserData()
	ud.Value = &hostError{err: err}
	ud.Metatable = vm.lib.errorMeta
	vm.L.Error(ud, 0)
}

// wait runs a host call that may block, with the Lua time budget paused.
// A speculative attempt stops before it instead (speculate.go).
func (vm *VM) wait(fn func()) {
	if !vm.cfg.SpeculateUntil.IsZero() {
		vm.stopSpeculation()
	}
	vm.waitNested(fn)
}

// waitNested is wait for execute, which a speculative attempt runs
// inline: its chain runs in this run, and stops on its own at whatever
// in it would wait.
func (vm *VM) waitNested(fn func()) {
	prev := vm.budget.set(false)
	defer vm.budget.set(prev)
	if vm.luaCtx.Err() != nil {
		// The budget was spent (set found it so: no timer ended the Lua
		// before it got here), or the run cancelled: no host call.
		vm.L.RaiseError("%s", vm.interrupted().Error())
	}
	fn()
}

// Reply reads the reply global back: a string or nil.
func (vm *VM) Reply() (*string, error) {
	switch v := vm.L.G.Global.RawGetString("reply").(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LString:
		s := string(v)
		return &s, nil
	default:
		return nil, &LuaError{Msg: fmt.Sprintf("`reply` must be a string or nil, got %s", luaTypeName(v))}
	}
}

// SetReply sets the reply global.
func (vm *VM) SetReply(r *string) {
	if r == nil {
		vm.L.G.Global.RawSetString("reply", lua.LNil)
		return
	}
	vm.L.G.Global.RawSetString("reply", lua.LString(*r))
}

// Var reads the var global back; it fails when the script replaced it.
func (vm *VM) Var() (*Var, error) {
	if vm.L.G.Global.RawGetString("var") != vm.varUD {
		return nil, &LuaError{Msg: "the `var` global was reassigned; write `var.<field>` instead"}
	}
	return vm.varRoot, nil
}

// budget is the Lua time budget of one VM. It counts only while Lua runs:
// host calls that wait pause it.
//
// It arms no timer: arming one per VM run woke the runtime's netpoller
// thread (a cross-CPU wake-up per VM on the hot path, issue #12). The VM
// reads the clock instead (overTime): between the meter's chunks of
// instructions, at every memory sync (memSyncStep bytes charged), whenever
// a library call polls the state's context (vmContext.Err: the pattern
// matcher does, every few thousand steps), and when the budget pauses or
// resumes. So a loop, a backtracking pattern and a run of instructions
// that each allocate much (`..` on big strings) stop as the timer stopped
// them. What no check sees is the inside of one long library call that
// polls nothing (string.rep or table.concat up to MaxStringBytes, a plain
// string.find over such a string, table.sort of a table the memory
// ceiling allows): the timer did not stop those mid-call either
// (cancelling the context interrupts nothing that does not poll it), each
// is bounded by the string and memory limits, and the clock catches the
// time it took at the next check: the meter's charge for what it built,
// or at most meterChunk instructions later.
type budget struct {
	left    time.Duration
	started time.Time
	on      bool
	cancel  context.CancelCauseFunc
}

// set turns counting on or off and returns the previous state. A budget
// found spent as it pauses or resumes cancels the VM's Lua context: the
// Lua that resumes stops at its next instruction.
func (b *budget) set(on bool) bool {
	prev := b.on
	switch {
	case on && !b.on:
		b.on = true
		b.started = time.Now()
	case !on && b.on:
		b.on = false
		b.left -= time.Since(b.started)
	default:
		return prev
	}
	if b.left <= 0 {
		b.cancel(errBudget)
	}
	return prev
}

func (b *budget) stop() {
	b.on = false
}

// overTime reads the clock, while Lua runs, for the time budget and a
// speculative attempt's deadline, and returns the cause the VM must stop
// with, or nil.
func (vm *VM) overTime() error {
	b := &vm.budget
	if !b.on {
		return nil
	}
	now := time.Now()
	if now.Sub(b.started) >= b.left {
		return errBudget
	}
	if vm.speculationOverAt(now) {
		return ErrSpeculationStopped
	}
	return nil
}

// stopForTime ends the Lua under way when overTime says so: through its
// context, so that pcall cannot swallow it, and at once. Only for callers
// inside a call Lua made (the meter's).
func (vm *VM) stopForTime() {
	if cause := vm.overTime(); cause != nil {
		vm.cancel(cause)
		vm.L.RaiseError("%s", vm.interrupted().Error())
	}
}
