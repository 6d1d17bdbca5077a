package luavm

import (
	"errors"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
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
	// The root's proxy is kept in varUD, not in the map, which most
	// sections then never need (New makes the root's proxy).
	root := node == vm.varRoot.root
	if root && vm.varUD != nil {
		return vm.varUD
	}
	if ud, ok := vm.proxies[node]; ok {
		return ud
	}
	ud := vm.L.NewUserData()
	ud.Value = &varRef{node: node, path: path}
	ud.Metatable = vm.lib.varMeta
	if !root {
		if vm.proxies == nil {
			vm.proxies = make(map[*Table]*lua.LUserData)
		}
		vm.proxies[node] = ud
	}
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
	vm := vmOf(L)
	old := r.node.get(k)
	oldSize, _ := measure(old)
	d, size := vm.checkVarValue(r, k, L.Get(3), oldSize)
	delta := r.node.set(k, d)
	vm.grew(r, delta+size-oldSize, old)
	return 0
}

func varLen(L *lua.LState) int {
	r := L.CheckUserData(1).Value.(*varRef)
	L.Push(lua.LNumber(len(r.node.Arr)))
	return 1
}

// toLua presents data stored under parent[k] to Lua: containers as proxies,
// so that writes through them reach var and count against its bound;
// scalars as plain values.
func (vm *VM) toLua(parent *varRef, v any, k lua.LValue) lua.LValue {
	if x, ok := v.(*Table); ok {
		return vm.proxy(x, childPath(parent.path, k))
	}
	return vm.FromData(v)
}

// checkVarValue converts v, about to replace a value of size oldSize at
// parent[k], and returns it with its size estimate. It raises at the
// assigning line when v is not JSON data, or when the assignment would take
// var past MaxVarBytes; the conversion stops as soon as that is certain, so
// an oversized value is never copied whole.
func (vm *VM) checkVarValue(parent *varRef, k, v lua.LValue, oldSize int) (any, int) {
	path := childPath(parent.path, k)
	c := converter{vm: vm}
	if !parent.node.detached {
		// An entry costs at most entryCost plus its key; counting it up
		// front keeps the check on the safe side.
		name, _, _ := keyOf(k)
		c.budget = max(vm.limits.MaxVarBytes-vm.varRoot.size+oldSize-entryCost-len(name), 1)
	}
	d, err := c.toData(v, path, 0)
	if errors.Is(err, errOverBudget) {
		vm.L.RaiseError("%s: the assignment would grow var past its %d-byte limit (var holds about %d bytes); keep large data in the store instead", path, vm.limits.MaxVarBytes, vm.varRoot.size)
	}
	if err != nil {
		vm.L.RaiseError("%s", err.Error())
	}
	return d, c.size
}

// grew updates var's size estimate after a write at r that changed it by
// delta and took old out of var. Writes through the proxy of a table that
// is no longer in var do not count, and the tables in old stop counting.
func (vm *VM) grew(r *varRef, delta int, old any) {
	if r.node.detached {
		return
	}
	detach(old)
	vm.varRoot.size += delta
}
