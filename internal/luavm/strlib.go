package luavm

import (
	"errors"
	"strconv"
	"strings"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"

	"github.com/promptforge-go/promptforge/internal/luavm/pattern"
)

// The string functions below replace gopher-lua's where one Go call could
// otherwise outrun the VM's limits. gopher-lua's string.find, match, gmatch
// and gsub run its pattern matcher as one uninterruptible call, and its
// gsub copies the whole result once per match; here they run on the
// vendored matcher (package pattern), which polls the VM's Lua context, so
// both the time budget and the run's cancellation stop a backtracking
// pattern, and gsub builds its result once. Their semantics are gopher-lua's
// except where noted on each function.

// maxResults caps how many values one library call pushes (string.byte,
// unpack). gopher-lua copies its whole value stack each time the stack
// grows, so a call returning a million values allocated gigabytes before
// the registry limit could refuse it; the cap is checked before anything
// is pushed.
const maxResults = 1 << 16

// findClockEvery is how many pattern searches share one clock read on
// entry (see find).
const findClockEvery = 16

// noSpecials reports whether p has no pattern magic characters, so a plain
// substring search finds what the matcher would.
func noSpecials(p string) bool {
	return !strings.ContainsAny(p, "^$*+?.([%-")
}

func compilePattern(L *lua.LState, p string) *pattern.Pattern {
	pat, err := pattern.Compile(p)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	return pat
}

// find runs one pattern search under the VM's Lua context, whose Err the
// matcher polls (vmContext.Err reads the clock). When that context ends
// (time budget, cancellation, a speculative attempt's stop) the raised
// error is replaced by the Quota or Cancelled error when the chunk unwinds
// (see interrupted).
//
// Find polls once on entry, then every few thousand steps of matching;
// gsub and gmatch search once per match, so a clock read at every entry
// poll made a gsub of many one-byte matches some 20% slower than with no
// read (the matching is a few steps per match). The entry poll reads the
// clock on every findClockEvery-th search only: between two reads run at
// most findClockEvery searches that each ended short of a step poll.
func (vm *VM) find(L *lua.LState, fn string, pat *pattern.Pattern, s string, init int) *pattern.Match {
	c := &vm.vmCtx
	c.finds++
	c.entryPoll = c.finds%findClockEvery != 0
	m, err := pat.Find(c, s, init)
	c.entryPoll = false
	if err != nil {
		var perr *pattern.Error
		if errors.As(err, &perr) {
			L.RaiseError("%s", perr.Error())
		}
		L.RaiseError("%s was interrupted: %v", fn, err)
	}
	return m
}

// capture is capture i of m as a Lua value: the text, or the position for a
// position capture. The text is an L.Piece, so a short capture kept does
// not keep all of s alive.
func capture(L *lua.LState, s string, m *pattern.Match, i int) lua.LValue {
	start, end, pos := m.Capture(i)
	if pos {
		return lua.LNumber(start)
	}
	return L.Piece(s, start, end)
}

// pushCaptures pushes m's captures, or the whole match when the pattern has
// none and whole is set.
func pushCaptures(L *lua.LState, s string, m *pattern.Match, whole bool) int {
	n := m.Captures()
	if n == 0 {
		if !whole {
			return 0
		}
		L.Push(L.Piece(s, m.Start(), m.End()))
		return 1
	}
	for i := 1; i <= n; i++ {
		L.Push(capture(L, s, m, i))
	}
	return n
}

// startIndex turns a Lua init argument (1-based, negative from the end)
// into a byte offset, as gopher-lua does; it may exceed len(s).
func startIndex(s string, i int) int {
	if i != 0 {
		i--
	}
	if i < 0 {
		i += len(s) + 1
	}
	return max(i, 0)
}

// strFind is string.find(s, pattern [, init [, plain]]). Unlike
// gopher-lua, an empty pattern honours init and an init past the end finds
// nothing (gopher-lua answered 1, 0 and crashed on a plain find,
// respectively); Lua 5.4 does the same.
func (vm *VM) strFind(L *lua.LState) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	init := startIndex(s, L.OptInt(3, 1))
	if lua.LVAsBool(L.Get(4)) || noSpecials(p) {
		if init > len(s) {
			L.Push(lua.LNil)
			return 1
		}
		i := strings.Index(s[init:], p)
		if i < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init + i + 1))
		L.Push(lua.LNumber(init + i + len(p)))
		return 2
	}
	m := vm.find(L, "string.find", compilePattern(L, p), s, init)
	if m == nil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LNumber(m.Start() + 1))
	L.Push(lua.LNumber(m.End()))
	return 2 + pushCaptures(L, s, m, false)
}

// strMatch is string.match(s, pattern [, init]). No match returns one nil
// (gopher-lua returned no value at all).
func (vm *VM) strMatch(L *lua.LState) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	init := L.OptInt(3, 1)
	if init < 0 {
		init += len(s) + 1
	}
	init = max(init-1, 0)
	m := vm.find(L, "string.match", compilePattern(L, p), s, init)
	if m == nil {
		L.Push(lua.LNil)
		return 1
	}
	return pushCaptures(L, s, m, true)
}

// strGmatch is string.gmatch(s, pattern). It matches lazily, one match per
// iteration, where gopher-lua collected every match before the first.
func (vm *VM) strGmatch(L *lua.LState) int {
	s := L.CheckString(1)
	pat := compilePattern(L, L.CheckString(2))
	pos, done := 0, false
	L.Push(L.NewFunction(func(L *lua.LState) int {
		if done || pos > len(s) {
			return 0
		}
		m := vm.find(L, "string.gmatch", pat, s, pos)
		if m == nil {
			done = true
			return 0
		}
		// An empty match moves on by one byte, so the loop ends.
		pos = max(m.Start()+1, m.End())
		done = pat.Anchored()
		return pushCaptures(L, s, m, true)
	}))
	return 1
}

// strGsub is string.gsub(s, pattern, repl [, n]). It builds its result once
// and refuses one longer than MaxStringBytes. A string replacement reads %0
// as the whole match, %1–%9 as captures (%1 is the whole match when the
// pattern has no capture), %% as "%", and keeps any other "%x" as is. A
// table (or var data) is indexed with the first capture or the whole match,
// a function is called with every capture or the whole match; false or nil
// keeps the match. Differences from gopher-lua: n <= 0 replaces nothing (as
// in Lua; gopher-lua treated a negative n as no limit), a number is
// accepted as the replacement string, and a table or function result that
// is neither a string nor a number is an error (as in Lua; gopher-lua
// replaced the match with "").
func (vm *VM) strGsub(L *lua.LState) int {
	s := L.CheckString(1)
	pat := compilePattern(L, L.CheckString(2))
	repl := L.Get(3)
	switch repl.(type) {
	case lua.LString, lua.LNumber, *lua.LTable, *lua.LFunction:
	default:
		if _, ok := varOf(repl); !ok {
			L.RaiseError("bad argument #3 to 'gsub' (string/table/function expected, got %s)", luaTypeName(repl))
		}
	}
	limit := -1
	if L.Get(4) != lua.LNil {
		limit = max(L.CheckInt(4), 0)
	}
	maxBytes := vm.limits.MaxStringBytes
	var b strings.Builder
	count, pos, copied := 0, 0, 0
	write := func(parts ...string) {
		n := b.Len()
		for _, p := range parts {
			n += len(p)
		}
		if n > maxBytes {
			L.RaiseError("string.gsub result would exceed the %d-byte string limit", maxBytes)
		}
		for _, p := range parts {
			b.WriteString(p)
		}
	}
	for (limit < 0 || count < limit) && pos <= len(s) {
		m := vm.find(L, "string.gsub", pat, s, pos)
		if m == nil {
			break
		}
		count++
		start, end := m.Start(), m.End()
		write(s[copied:start], vm.replacement(L, s, m, repl))
		copied = end
		pos = max(start+1, end)
		if pat.Anchored() {
			break
		}
	}
	if count == 0 {
		L.Push(lua.LString(s))
		L.Push(lua.LNumber(0))
		return 2
	}
	write(s[copied:])
	vm.meter.Charge(lua.CostString + b.Len())
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(count))
	return 2
}

// replacement is what gsub puts in place of match m.
func (vm *VM) replacement(L *lua.LState, s string, m *pattern.Match, repl lua.LValue) string {
	whole := s[m.Start():m.End()]
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString:
		return expandReplacement(L, string(r), s, m)
	case lua.LNumber:
		return expandReplacement(L, r.String(), s, m)
	case *lua.LFunction:
		L.Push(r)
		n := pushCaptures(L, s, m, true)
		L.Call(n, 1)
		v = L.Get(-1)
		L.Pop(1)
	default: // a table or a var proxy; both index through metamethods
		key := lua.LValue(lua.LString(whole))
		if m.Captures() > 0 {
			key = capture(L, s, m, 1)
		}
		v = L.GetTable(repl, key)
	}
	switch x := v.(type) {
	case *lua.LNilType:
		return whole
	case lua.LBool:
		if !x {
			return whole
		}
	case lua.LString, lua.LNumber:
		return x.String()
	}
	L.RaiseError("invalid replacement value (a %s)", luaTypeName(v))
	return ""
}

// expandReplacement expands the % escapes of a gsub replacement string.
func expandReplacement(L *lua.LState, r, s string, m *pattern.Match) string {
	if !strings.Contains(r, "%") {
		return r
	}
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		if c != '%' || i == len(r)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		d := r[i]
		switch {
		case d == '%':
			b.WriteByte('%')
		case d >= '0' && d <= '9':
			n := int(d - '0')
			switch {
			case n == 0 || (n == 1 && m.Captures() == 0):
				b.WriteString(s[m.Start():m.End()])
			case n > m.Captures():
				L.RaiseError("invalid capture index %%%d in replacement string", n)
			default:
				start, end, pos := m.Capture(n)
				if pos {
					b.WriteString(strconv.Itoa(start))
				} else {
					b.WriteString(s[start:end])
				}
			}
		default:
			b.WriteByte('%')
			b.WriteByte(d)
		}
	}
	return b.String()
}

// strByte is string.byte(s [, i [, j]]) with at most maxResults results.
func strByte(L *lua.LState) int {
	s := L.CheckString(1)
	n := len(s)
	start := L.OptInt(2, 1) - 1
	end := L.OptInt(3, -1)
	if start < 0 {
		start += n + 1
	}
	if end < 0 {
		end += n + 1
	}
	if L.GetTop() == 2 {
		if start < 0 || start >= n {
			return 0
		}
		L.Push(lua.LNumber(s[start]))
		return 1
	}
	start = max(start, 0)
	end = min(end, n)
	if end <= start {
		return 0
	}
	if end-start > maxResults {
		L.RaiseError("string.byte would return %d values, more than the %d one call may return; use string.sub to take the slice", end-start, maxResults)
	}
	for i := start; i < end; i++ {
		L.Push(lua.LNumber(s[i]))
	}
	return end - start
}

// strRep is string.rep with its result bounded.
func (vm *VM) strRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if len(s) > vm.limits.MaxStringBytes/n {
		L.RaiseError("string.rep result would exceed the %d-byte string limit", vm.limits.MaxStringBytes)
	}
	vm.meter.Charge(lua.CostString + len(s)*n)
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// strFormat wraps gopher-lua's string.format (which hands the format to
// fmt.Sprintf). It refuses widths and precisions over two digits, as Lua
// does, so a format cannot ask for a gigabyte of padding, and it refuses,
// before anything is built, a format whose result could exceed
// MaxStringBytes: the estimate is an upper bound that counts each
// argument's text by the verb's worst expansion (%q quotes a byte as up to
// four, %x spells it as up to three).
func (vm *VM) strFormat(L *lua.LState, orig lua.LGFunction) int {
	f := L.CheckString(1)
	size, arg := 0, 2
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			size++
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			size++
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		width, wdigits := 0, 0
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			width = width*10 + int(f[i]-'0')
			i++
			wdigits++
		}
		prec, pdigits := 0, 0
		if i < len(f) && f[i] == '.' {
			i++
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				prec = prec*10 + int(f[i]-'0')
				i++
				pdigits++
			}
		}
		if wdigits > 2 || pdigits > 2 {
			L.RaiseError("invalid format (width or precision too long)")
		}
		verb := byte('s')
		if i < len(f) {
			verb = f[i]
		}
		if verb == '[' || verb == '*' {
			// fmt's argument indexes and argument widths are not Lua's,
			// and %[1]s repeated would reuse one argument past the
			// estimate.
			L.RaiseError("invalid option '%%%c' to 'format'", verb)
		}
		size += width + prec + formatEstimate(verb, L.Get(arg))
		arg++
	}
	if size > vm.limits.MaxStringBytes {
		L.RaiseError("string.format result would exceed the %d-byte string limit", vm.limits.MaxStringBytes)
	}
	vm.meter.Charge(lua.CostString + size)
	return orig(L)
}

// formatEstimate bounds the bytes one verb produces for v, besides width
// and precision: a string's text times the verb's expansion (%q quotes a
// byte as up to four, %x spells it as up to three), a number's longest
// rendering (%f of 1e308 has over 300 digits).
func formatEstimate(verb byte, v lua.LValue) int {
	switch x := v.(type) {
	case lua.LString:
		switch verb {
		case 'q':
			return 2 + 4*len(x)
		case 'x', 'X':
			return 3 * len(x)
		}
		return len(x) + 32 // room for fmt's %!verb(...) wrapping
	case lua.LNumber:
		if verb == 'f' || verb == 'F' {
			return 330
		}
		return 80 // %b of an int64 is 65 bytes
	}
	return 64 // tostring of a table, function, userdata, boolean or nil
}
