package luavm

import (
	"errors"
	"time"
)

// Speculative attempts (issue #12). A host that wants a Lua-only run
// without the goroutine hand-offs of its ordinary path first runs it on the
// caller's goroutine as an attempt, with Options.SpeculateUntil set, and
// throws the attempt away and runs again the ordinary way when it stops.
// So the attempt must stop before it does anything that would wait on the
// host or reach outside the run: every binding that goes through wait
// (models.need, models.default, models.infer, handle:infer, tools.need,
// fanout) stops instead of calling the host; execute does not (waitNested),
// since its chain runs in the same run and its own VMs stop on their own.
// And it stops once the clock passes SpeculateUntil, read without a timer
// (arming one wakes the runtime's netpoller thread, the very cost the
// attempt avoids): where the time budget reads it (see budget: between
// the meter's chunks of instructions, at memory syncs, whenever the
// pattern matcher polls the state's context), and at each chunk
// (runProto).
//
// The stop goes through the VM's Lua context, as the instruction quota
// does, so that pcall cannot swallow it: the interpreter raises again at
// the next instruction, and interrupted reports a CancelledError whose
// cause is ErrSpeculationStopped. A VM so stopped is never pooled
// (reusable sees its cancelled context).

// ErrSpeculationStopped is the cause of a speculative attempt's stop: it
// reached a host call that waits, or ran past its SpeculateUntil. The
// caller runs the prompt again without SpeculateUntil.
var ErrSpeculationStopped = errors.New("speculative attempt stopped: run it again as an ordinary run")

// speculationOver reports whether the VM is a speculative attempt whose
// time is up.
func (vm *VM) speculationOver() bool { return vm.speculationOverAt(time.Now()) }

// speculationOverAt is speculationOver at now: the one reading of the
// attempt's deadline, at each chunk (runProto) and in the clock checks
// (overTime).
func (vm *VM) speculationOverAt(now time.Time) bool {
	until := vm.cfg.SpeculateUntil
	return !until.IsZero() && !now.Before(until)
}

// stopSpeculation ends the attempt from inside a call Lua made: its
// context is cancelled, and the error raised now unwinds the call.
func (vm *VM) stopSpeculation() {
	vm.cancel(ErrSpeculationStopped)
	vm.L.RaiseError("%s", ErrSpeculationStopped.Error())
}

// Err is the Lua context's error, after the clock checks (overTime): a
// long library call that polls it (the pattern matcher does) stops once
// the time budget is spent or the attempt's time is up. It cannot raise
// (the caller is Go code mid-call); the cancelled context makes the caller
// give up, and the chunk's unwinding reports the cause (interrupted).
// A pattern search's entry poll skips the clock but on every
// findClockEvery-th search (entryPoll, see VM.find).
func (c *vmContext) Err() error {
	if c.entryPoll {
		c.entryPoll = false
		return c.Context.Err()
	}
	if cause := c.vm.overTime(); cause != nil {
		c.vm.cancel(cause)
	}
	return c.Context.Err()
}
