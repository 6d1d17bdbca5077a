package luavm

import (
	"sort"
	"strings"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

// openSandbox builds the globals: the kept base functions, the string,
// table and math libraries, and the var-aware and bounded replacements.
// Nothing else from gopher-lua's libraries is reachable: no code loading
// (load, loadstring, dofile, loadfile, require, module), no raw access that
// would bypass the var/sys guards (rawget, rawset, rawequal), no
// environment switching (getfenv, setfenv), no collectgarbage, and no
// output that would bypass log() (print, warn).
func (vm *VM) openSandbox(s *sharedLib) {
	L := vm.L
	// The base functions are in the global table already: New copies
	// them from the shared template (globalsFor).
	g := L.G.Global
	g.SetOwned("_G", g)
	str := vm.st.table(tableString, s.strProxy, 0)
	g.SetOwned("string", str)
	// Methods on strings look up this VM's string table, so functions a
	// prompt adds to it work as methods too.
	L.SetMetatable(lua.LString(""), vm.st.stringMeta(str))
	g.SetOwned("table", vm.st.table(tableTable, s.tableProxy, 0))
	g.SetOwned("math", vm.st.table(tableMath, s.mathProxy, 0))
}

// varOf returns the var proxy behind v, if v is one.
func varOf(v lua.LValue) (*varRef, bool) {
	ud, ok := v.(*lua.LUserData)
	if !ok {
		return nil, false
	}
	r, ok := ud.Value.(*varRef)
	return r, ok
}

// luaType reports var proxies as tables: they stand for JSON objects and
// arrays, and prompts written for the reference test them that way.
func (vm *VM) luaType(L *lua.LState) int {
	v := L.CheckAny(1)
	L.Push(lua.LString(luaTypeName(v)))
	return 1
}

// luaNext is next() that also walks var proxies (array slots, then fields
// in sorted order).
func (vm *VM) luaNext(L *lua.LState) int {
	if r, ok := varOf(L.Get(1)); ok {
		k, v := vm.varNext(r, L.Get(2))
		if k == lua.LNil {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(k)
		L.Push(v)
		return 2
	}
	tb := L.CheckTable(1)
	k, v := tb.Next(L.Get(2))
	if k == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(v)
	return 2
}

func (vm *VM) varNext(r *varRef, key lua.LValue) (lua.LValue, lua.LValue) {
	t := r.node
	pos := 0 // next array index (1-based) to report
	switch k := key.(type) {
	case *lua.LNilType:
		pos = 1
	case lua.LNumber:
		if n := int(k); float64(n) == float64(k) && n >= 1 && n <= len(t.Arr) {
			pos = n + 1
		}
	}
	if pos >= 1 && pos <= len(t.Arr) {
		return lua.LNumber(pos), vm.toLua(r, t.Arr[pos-1], lua.LNumber(pos))
	}
	keys := t.sortedKeys()
	start := 0
	if pos == 0 {
		name, _, _ := keyOf(key)
		if s, ok := key.(lua.LString); ok {
			name = string(s)
		}
		i := sort.SearchStrings(keys, name)
		if i >= len(keys) || keys[i] != name {
			return lua.LNil, lua.LNil
		}
		start = i + 1
	}
	if start >= len(keys) {
		return lua.LNil, lua.LNil
	}
	k := lua.LString(keys[start])
	return k, vm.toLua(r, t.Hash[keys[start]], k)
}

func (vm *VM) luaPairs(L *lua.LState) int {
	if r, ok := varOf(L.Get(1)); ok {
		t := r.node
		keys := t.sortedKeys()
		i := 0
		iter := func(L *lua.LState) int {
			for i < len(t.Arr)+len(keys) {
				i++
				if i <= len(t.Arr) {
					L.Push(lua.LNumber(i))
					L.Push(vm.toLua(r, t.Arr[i-1], lua.LNumber(i)))
					return 2
				}
				name := keys[i-len(t.Arr)-1]
				v, ok := t.Hash[name]
				if !ok {
					continue // deleted while iterating
				}
				L.Push(lua.LString(name))
				L.Push(vm.toLua(r, v, lua.LString(name)))
				return 2
			}
			return 0
		}
		L.Push(L.NewFunction(iter))
		L.Push(L.Get(1))
		L.Push(lua.LNil)
		return 3
	}
	tb := L.CheckTable(1)
	L.Push(vm.lib.next)
	L.Push(tb)
	L.Push(lua.LNil)
	return 3
}

func luaIpairs(L *lua.LState) int {
	obj := L.Get(1)
	if _, ok := varOf(obj); !ok {
		L.CheckTable(1)
	}
	L.Push(L.NewFunction(ipairsIter))
	L.Push(obj)
	L.Push(lua.LNumber(0))
	return 3
}

func ipairsIter(L *lua.LState) int {
	i := L.CheckInt(2) + 1
	var v lua.LValue
	if r, ok := varOf(L.Get(1)); ok {
		if i > len(r.node.Arr) {
			return 0
		}
		v = vmOf(L).toLua(r, r.node.Arr[i-1], lua.LNumber(i))
	} else {
		v = L.CheckTable(1).RawGetInt(i)
	}
	if v == lua.LNil {
		return 0
	}
	L.Push(lua.LNumber(i))
	L.Push(v)
	return 2
}

// arrayArg reads argument n as an array: a Lua table or var data. get
// returns element i (nil outside 1..length).
func (vm *VM) arrayArg(L *lua.LState, n int) (get func(i int) lua.LValue, length int) {
	if r, ok := varOf(L.Get(n)); ok {
		length = len(r.node.Arr)
		return func(i int) lua.LValue {
			if i < 1 || i > length {
				return lua.LNil
			}
			return vm.toLua(r, r.node.Arr[i-1], lua.LNumber(i))
		}, length
	}
	tb := L.CheckTable(n)
	return tb.RawGetInt, tb.Len()
}

func (vm *VM) luaUnpack(L *lua.LState) int {
	get, n := vm.arrayArg(L, 1)
	start := L.OptInt(2, 1)
	end := L.OptInt(3, n)
	if start > end {
		return 0
	}
	if end-start >= maxResults {
		L.RaiseError("too many results to unpack")
	}
	for i := start; i <= end; i++ {
		L.Push(get(i))
	}
	return end - start + 1
}

// tableConcat is table.concat that also accepts var proxies, renders
// userdata through tostring (fanout results), and bounds its output.
func (vm *VM) tableConcat(L *lua.LState) int {
	get, n := vm.arrayArg(L, 1)
	sep := L.OptString(2, "")
	i := L.OptInt(3, 1)
	j := L.OptInt(4, n)
	var b strings.Builder
	for k := i; k <= j; k++ {
		var s string
		switch v := get(k).(type) {
		case lua.LString:
			s = string(v)
		case lua.LNumber:
			s = v.String()
		case *lua.LUserData:
			if _, isVar := v.Value.(*varRef); isVar {
				L.RaiseError("invalid value (table) at index %d in table for 'concat'", k)
			}
			s = L.ToStringMeta(v).String()
		default:
			L.RaiseError("invalid value (%s) at index %d in table for 'concat'", luaTypeName(v), k)
		}
		if b.Len()+len(s)+len(sep) > vm.limits.MaxStringBytes {
			L.RaiseError("table.concat result would exceed the %d-byte string limit", vm.limits.MaxStringBytes)
		}
		b.WriteString(s)
		if k < j {
			b.WriteString(sep)
		}
	}
	vm.meter.Charge(lua.CostString + b.Len())
	L.Push(lua.LString(b.String()))
	return 1
}

func (vm *VM) tableInsert(L *lua.LState) int {
	r, ok := varOf(L.Get(1))
	if !ok {
		tbl := L.CheckTable(1)
		switch L.GetTop() {
		case 2:
			tbl.Append(L.Get(2))
		case 3:
			tbl.Insert(L.CheckInt(2), L.CheckAny(3))
		default:
			L.RaiseError("wrong number of arguments to 'insert'")
		}
		return 0
	}
	t := r.node
	var pos int
	var val lua.LValue
	switch L.GetTop() {
	case 2:
		pos, val = len(t.Arr)+1, L.Get(2)
	case 3:
		pos, val = L.CheckInt(2), L.CheckAny(3)
	default:
		L.RaiseError("wrong number of arguments to 'insert'")
	}
	if pos < 1 || pos > len(t.Arr)+1 {
		L.RaiseError("bad argument #2 to 'insert' (position out of bounds)")
	}
	d, size := vm.checkVarValue(r, lua.LNumber(pos), val, 0)
	if d == nil {
		return 0
	}
	t.Arr = append(t.Arr, nil)
	copy(t.Arr[pos:], t.Arr[pos-1:])
	t.Arr[pos-1] = d
	vm.grew(r, size+entryCost+t.absorb(), nil)
	return 0
}

func (vm *VM) tableRemove(L *lua.LState) int {
	r, ok := varOf(L.Get(1))
	if !ok {
		tbl := L.CheckTable(1)
		if L.GetTop() == 1 {
			L.Push(tbl.Remove(-1))
		} else {
			L.Push(tbl.Remove(L.CheckInt(2)))
		}
		return 1
	}
	t := r.node
	n := len(t.Arr)
	pos := L.OptInt(2, n)
	if n == 0 || pos < 1 || pos > n {
		L.Push(lua.LNil)
		return 1
	}
	old := t.Arr[pos-1]
	oldSize, _ := measure(old)
	v := vm.toLua(r, old, lua.LNumber(pos))
	copy(t.Arr[pos-1:], t.Arr[pos:])
	t.Arr = t.Arr[:n-1]
	vm.grew(r, -entryCost-oldSize, old)
	L.Push(v)
	return 1
}

func tableSort(orig lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if _, ok := varOf(L.Get(1)); ok {
			L.RaiseError("table.sort cannot sort var data in place; copy it into a local table, sort that, and assign it back")
		}
		return orig(L)
	}
}

// luaUntrusted wraps a string in the run's untrusted-content envelope.
func (vm *VM) luaUntrusted(L *lua.LState) int {
	v := L.Get(1)
	s, ok := v.(lua.LString)
	if !ok {
		L.RaiseError("bad argument #1 to 'untrusted' (string expected, got %s)", luaTypeName(v))
	}
	if vm.cfg.Guard == nil {
		L.RaiseError("untrusted is unavailable: the run has no guard")
	}
	// The wrapped copy is a new string, up to four times the text (each
	// "<" becomes "&lt;"): bounded and charged like one `..` builds.
	if size := len(vm.cfg.Guard.Wrap("")) + len(s) + 3*strings.Count(string(s), "<"); size > vm.limits.MaxStringBytes {
		L.RaiseError("untrusted result would exceed the %d-byte string limit", vm.limits.MaxStringBytes)
	}
	out := vm.cfg.Guard.Wrap(string(s))
	vm.meter.Charge(lua.CostString + len(out))
	L.Push(lua.LString(out))
	return 1
}
