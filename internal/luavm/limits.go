package luavm

import "time"

// Limits bound one VM. Zero fields take the defaults below.
type Limits struct {
	// MaxInstructions is the reference's instruction quota: the Lua VM
	// instructions one VM may execute (counted by the vendored
	// interpreter), 10,000,000 by default.
	MaxInstructions int64
	// LuaTime is the budget of Lua execution time per VM, the backstop of
	// the instruction quota: it bounds what executes few instructions (a
	// long pattern search, big allocations) and a machine so slow that
	// the quota takes long. It is paused while the VM waits on the host
	// (model calls, execute, tools). It is checked by reading the clock,
	// not by a timer: see budget in vm.go. See DefaultLuaTime.
	LuaTime time.Duration
	// CallStackSize caps nested Lua calls (runaway recursion fails cleanly).
	CallStackSize int
	// RegistryMaxSize caps the Lua value stack (registry) in slots.
	RegistryMaxSize int
	// MaxStringBytes caps the strings built by string.rep, string.format,
	// string.gsub, table.concat and the `..` operator (checked inside the
	// vendored interpreter before the result is built), and the engine's
	// rendered prose blocks.
	MaxStringBytes int
	// MaxVarBytes caps the size of var's data, counted as an estimate of
	// the memory it holds: every object or array 64 bytes, every element
	// or field 16 bytes plus its key, every string its length, any other
	// value 8 bytes. An assignment that would take var past it fails at the
	// assigning line.
	MaxVarBytes int
	// LogEvents and LogBytes are the per-VM budgets of log().
	LogEvents int
	LogBytes  int
	// MaxRunMemory is the memory ceiling of a run: what its Lua values
	// (strings, tables, closures) and its store may hold at once, across
	// all of the run's VMs (see Memory). It is per run, not per VM: the
	// engine hands every VM of a run one Memory built from it.
	MaxRunMemory int64
}

// Defaults for Limits.
const (
	// DefaultMaxInstructions is the reference's instruction quota.
	DefaultMaxInstructions = 10_000_000
	// DefaultLuaTime is the backstop of the instruction quota, about 5
	// times what the quota takes on this machine. Measured with gopher-lua v1.1.2 and Go 1.26 on a
	// 2-vCPU development VM, with the per-instruction context check a VM
	// runs with: a numeric for loop adding to a local (two VM instructions
	// per iteration) ran about 24 million instructions per second, a loop
	// appending to a table about 8 million, and both about 8 times slower
	// under the race detector. The quota is thus about 0.4 s of simple Lua;
	// 2 s leaves a factor of about 5 for simple code and 1.6 for
	// table-heavy code, for slower machines and garbage collection, so
	// the quota, not the clock, ends an ordinary runaway loop (under the
	// race detector the clock may come first).
	DefaultLuaTime         = 2 * time.Second
	DefaultCallStackSize   = 200
	DefaultRegistryMaxSize = 1 << 20 // slots; ~16 MiB of values
	DefaultMaxStringBytes  = 16 << 20
	DefaultMaxVarBytes     = 16 << 20
	DefaultLogEvents       = 1024
	DefaultLogBytes        = 1024 * 256
	// DefaultMaxRunMemory is the reference's per-VM memory ceiling,
	// applied here per run.
	DefaultMaxRunMemory = 64 << 20

	// The registry starts small (cheap VMs) and grows in big steps: gopher-lua
	// copies the whole registry on every growth, and a small step made a
	// 100k-item table.concat take seconds instead of milliseconds.
	registryInitial  = 128
	registryGrowStep = 4096
)

// WithDefaults fills zero fields.
func (l Limits) WithDefaults() Limits {
	if l.LuaTime <= 0 {
		l.LuaTime = DefaultLuaTime
	}
	if l.MaxInstructions <= 0 {
		l.MaxInstructions = DefaultMaxInstructions
	}
	if l.CallStackSize <= 0 {
		l.CallStackSize = DefaultCallStackSize
	}
	if l.RegistryMaxSize <= 0 {
		l.RegistryMaxSize = DefaultRegistryMaxSize
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = DefaultMaxStringBytes
	}
	if l.MaxVarBytes <= 0 {
		l.MaxVarBytes = DefaultMaxVarBytes
	}
	if l.LogEvents <= 0 {
		l.LogEvents = DefaultLogEvents
	}
	if l.LogBytes <= 0 {
		l.LogBytes = DefaultLogBytes
	}
	if l.MaxRunMemory <= 0 {
		l.MaxRunMemory = DefaultMaxRunMemory
	}
	return l
}
