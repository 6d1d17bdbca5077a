package luavm

import (
	"errors"

	lua "github.com/yuin/gopher-lua"
)

// The var global is a guarded proxy: a userdata whose reads and writes go
// through metamethods, so every assignment (nested ones too) is validated
// as JSON data at the assigning line. The data itself lives in Go (*Table),
// which makes handing var to the next section, cloning it for execute and
// rendering it in templates free of any Lua conversion.
//
// A userdata rather than an empty table is used because Lua 5.1 ignores
// __len and __pairs on tables; the sandbox's type, next, pairs, ipairs,
// unpack and table.* functions see through the proxy instead.

type varRef struct {
	node *Table
	path string
}

func (vm *VM) proxy(node *Table, path string) *lua.LUserData {
	if ud, ok := vm.proxies[node]; ok {
		return ud
	}
	if vm.proxies == nil {
		vm.proxies = make(map[*Table]*lua.LUserData)
	}
	ud := vm.L.NewUserData()
	ud.Value = &varRef{node: node, path: path}
	ud.Metatable = shared().varMeta
	vm.proxies[node] = ud
	return ud
}

func varIndex(L *lua.LState) int {
	r := L.CheckUserData(1).Value.(*varRef)
	k := L.Get(2)
	L.Push(vmOf(L).toLua(r, r.node.get(k), k))
	return 1
}

func varNewIndex(L *lua.LState) int {
	r := L.CheckUserData(1).Value.(*varRef)
	k := L.Get(2)
	if _, _, ok := keyOf(k); !ok {
		L.RaiseError("%s keys must be strings or numbers, got %s", r.path, luaTypeName(k))
	}
	d := vmOf(L).checkVarValue(r, k, L.Get(3))
	r.node.set(k, d)
	return 0
}

func varLen(L *lua.LState) int {
	r := L.CheckUserData(1).Value.(*varRef)
	L.Push(lua.LNumber(len(r.node.Arr)))
	return 1
}

// toLua presents data stored under parent[k] to Lua: scalars as values,
// containers as proxies.
func (vm *VM) toLua(parent *varRef, v any, k lua.LValue) lua.LValue {
	switch x := v.(type) {
	case *Table:
		return vm.proxy(x, childPath(parent.path, k))
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	}
	// Data decoded from JSON (map/slice) only enters var through
	// assignments, which convert it; anything else is copied plainly.
	return vm.FromData(v)
}

// checkVarValue converts a value being assigned to var, raising at the
// assigning line when it is not JSON data.
func (vm *VM) checkVarValue(parent *varRef, k, v lua.LValue) any {
	c := converter{vm: vm}
	d, err := c.toData(v, childPath(parent.path, k), 0)
	if err != nil {
		var de *DataError
		if errors.As(err, &de) {
			vm.L.RaiseError("%s", de.Error())
		}
		vm.L.RaiseError("%s", err.Error())
	}
	return d
}
