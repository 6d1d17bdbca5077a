package luavm

import "time"

// Limits bound one VM. Zero fields take the defaults below.
type Limits struct {
	// LuaTime is the budget of Lua execution time per VM. gopher-lua has no
	// instruction hook, so this stands in for an instruction budget; it is
	// paused while the VM waits on the host (model calls, execute, tools).
	LuaTime time.Duration
	// CallStackSize caps nested Lua calls (runaway recursion fails cleanly).
	CallStackSize int
	// RegistryMaxSize caps the Lua value stack (registry) in slots.
	RegistryMaxSize int
	// MaxStringBytes caps strings built by string.rep, string.format and
	// table.concat.
	MaxStringBytes int
	// LogEvents and LogBytes are the per-VM budgets of log().
	LogEvents int
	LogBytes  int
}

// Defaults for Limits.
const (
	DefaultLuaTime         = 5 * time.Second
	DefaultCallStackSize   = 200
	DefaultRegistryMaxSize = 1 << 20 // slots; ~16 MiB of values
	DefaultMaxStringBytes  = 16 << 20
	DefaultLogEvents       = 1024
	DefaultLogBytes        = 1024 * 256

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
	if l.CallStackSize <= 0 {
		l.CallStackSize = DefaultCallStackSize
	}
	if l.RegistryMaxSize <= 0 {
		l.RegistryMaxSize = DefaultRegistryMaxSize
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = DefaultMaxStringBytes
	}
	if l.LogEvents <= 0 {
		l.LogEvents = DefaultLogEvents
	}
	if l.LogBytes <= 0 {
		l.LogBytes = DefaultLogBytes
	}
	return l
}
