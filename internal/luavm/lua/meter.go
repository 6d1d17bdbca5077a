package lua

import "strings"

// promptforge: this file is new (see doc.go). gopher-lua allocates through
// the Go runtime and has no allocation hook, so a sandbox could not bound
// what one state grows; the interpreter now reports the growth it causes
// to a Meter, and the sandbox decides what to do when it passes a mark.

// Meter counts the VM instructions a state executes, and the bytes it grows: strings built by concatenation and
// by string.upper, lower and reverse, new tables, table slots and keys,
// and closures. The counts approximate what the Go runtime allocates for
// them; they never subtract what becomes garbage, so the owner of the
// meter is expected to measure what is still reachable when the count
// passes its mark, and carry on from there (see package luavm).
//
// A Meter belongs to one state and is used on that state's goroutine only.
type Meter struct {
	// Charged is the bytes counted since Owner.Over last reset it.
	Charged int64
	// Mark: Charge calls Owner.Over as soon as Charged exceeds it.
	Mark int64
	// Owner is told when the meter passes its mark or its steps run out.
	// An interface rather than two func fields: a method value would be an
	// allocation per meter, and a state gets a meter per use.
	Owner MeterOwner
	// MaxStringBytes, when positive, caps the string a concatenation (the
	// `..` operator) may build: a longer result is a Lua error raised
	// before anything is built.
	MaxStringBytes int
	// Steps is how many more VM instructions the state may execute (with
	// a context: mainLoopWithContext counts them); once it is below zero,
	// every instruction first calls Owner.OutOfSteps.
	Steps int64
}

// MeterOwner is what a Meter reports to.
type MeterOwner interface {
	// Over is called, on the state's goroutine and from inside whatever
	// grew, once Charged exceeds Mark. It must lower Charged or raise Mark
	// (or raise a Lua error, where the state is running Lua).
	Over()
	// OutOfSteps is called before each instruction once Steps is below
	// zero; it is expected to end the run (raise a Lua error and cancel
	// the state's context).
	OutOfSteps()
}

// Approximate costs, in bytes, charged for what the interpreter allocates:
// a string's header (plus its bytes), a table, an array slot (an interface
// value), a hash key (the map entry and the key order gopher-lua keeps for
// next), a closure (plus one Upvalue per upvalue).
const (
	CostString   = 16
	CostTable    = 96
	CostSlot     = 16
	CostKey      = 192
	CostFunction = 96
	CostUpvalue  = 48
)

// Charge counts n bytes.
func (m *Meter) Charge(n int) {
	m.Charged += int64(n)
	if m.Charged > m.Mark {
		m.Owner.Over()
	}
}

// SetMeter makes m count what ls grows from now on, the global and
// registry tables included. Tables created before (or by another state)
// are not counted.
func (ls *LState) SetMeter(m *Meter) {
	ls.meter = m
	ls.G.Global.meter = m
	ls.G.Registry.meter = m
}

// charge counts n bytes against the state's meter, if it has one.
func (ls *LState) charge(n int) {
	if ls.meter != nil {
		ls.meter.Charge(n)
	}
}

// charge counts n bytes against the table's meter, if it has one.
func (tb *LTable) charge(n int) {
	if tb.meter != nil {
		tb.meter.Charge(n)
	}
}

// newMeteredTable is newLTable counted against ls's meter.
func (ls *LState) newMeteredTable(acap, hcap int) *LTable {
	tb := newLTable(acap, hcap)
	if ls.meter != nil {
		tb.meter = ls.meter
		// A hash size hint preallocates map entries only; the key order
		// structures grow with each key, which RawSetString charges.
		ls.meter.Charge(CostTable + max(acap, 0)*CostSlot + max(hcap, 0)*2*CostSlot)
	}
	return tb
}

// TableFields lets a meter's owner measure a table: its array slots (len
// and cap), its hash keys, and whether it is counted by a meter at all
// (tables built before SetMeter, or by another state, are not).
func (tb *LTable) TableFields() (arrayLen, arrayCap, keys int, metered bool) {
	return len(tb.array), cap(tb.array), len(tb.keys), tb.meter != nil
}

// Values is the state's value stack (registry), the whole allocated
// array: slots above the top may still hold values the Go runtime keeps
// alive. For a meter's owner measuring what the state holds.
func (ls *LState) Values() []LValue { return ls.reg.array }

// Frames calls fn with the function of each active call frame.
func (ls *LState) Frames(fn func(*LFunction)) {
	for i := 0; i < ls.stack.Sp(); i++ {
		if f := ls.stack.At(i).Fn; f != nil {
			fn(f)
		}
	}
}

// Piece is s[start:end] as a Lua string that does not keep s alive: a
// piece shorter than half of s is copied, and the copy counted. A Go
// substring shares its source's bytes, so a kept one-byte piece of a
// megabyte string would hold the megabyte while a meter's owner,
// measuring what the state reaches, counts one byte. A longer piece
// shares (it holds at most twice what is measured).
func (ls *LState) Piece(s string, start, end int) LString {
	piece := s[start:end]
	if len(piece) >= len(s)/2 {
		return LString(piece)
	}
	ls.charge(CostString + len(piece))
	return LString(strings.Clone(piece))
}
