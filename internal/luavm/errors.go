package luavm

import (
	"errors"
	"fmt"
)

// LuaError is a Lua runtime failure: a raised error, a misused host API, a
// bad return value. Msg keeps gopher-lua's "<chunk name>:<line>: " prefix,
// which already names the absolute file line because chunks are compiled
// with their leading lines padded.
type LuaError struct {
	Msg string
}

func (e *LuaError) Error() string { return e.Msg }

// QuotaError is an exhausted per-VM budget: the Lua time budget or the log
// budgets.
type QuotaError struct {
	Msg string
}

func (e *QuotaError) Error() string { return e.Msg }

// CancelledError reports that the run's context ended while Lua ran or
// waited. Cause is context.Cause of the run context.
type CancelledError struct {
	Cause error
}

func (e *CancelledError) Error() string {
	if e.Cause == nil {
		return "run cancelled"
	}
	return "run cancelled: " + e.Cause.Error()
}

func (e *CancelledError) Unwrap() error { return e.Cause }

// ScriptError is a host failure caused by how the script called the API (an
// undeclared alias, a heading that is not visible, ...). Bindings raise it
// as an ordinary Lua error at the calling line, so it reads like any other
// Lua error and pcall catches it.
type ScriptError struct {
	Msg string
}

func (e *ScriptError) Error() string { return e.Msg }

// Scriptf builds a ScriptError.
func Scriptf(format string, args ...any) error {
	return &ScriptError{Msg: fmt.Sprintf(format, args...)}
}

// errBudget is the cancellation cause the Lua time budget uses.
var errBudget = errors.New("lua time budget exhausted")

// hostError carries a typed host error through Lua as an error object, so
// that pcall can catch it and, when nothing does, the run reports the
// original error rather than its text.
type hostError struct {
	err error
}

// jumpSignal is the error object jump raises to unwind the chunk.
type jumpSignal struct{}
