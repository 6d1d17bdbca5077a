package luavm

// The control globals (jump, execute, list_from_section, fanout), the
// installation of the per-phase host tables and alias globals, and the
// read-only handle objects (Tool, Model, fanout result) with their
// metatables.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

// InstallH1Tables (re)installs the live tools and models tables of the H1.
// The engine calls it before each H1 Lua block, so a block that replaced
// them does not break the next one.
func (vm *VM) InstallH1Tables() {
	sh := vm.lib
	vm.L.G.Global.RawSetString("tools", proxyTable(vm.L, sh.h1ToolsProxy, 0))
	vm.L.G.Global.RawSetString("models", proxyTable(vm.L, sh.h1ModelsProxy, 0))
}

func (vm *VM) installSectionTables(sh *sharedLib) {
	vm.L.G.Global.SetOwned("tools", vm.st.table(tableTools, sh.secToolsProxy, 1))
	vm.L.G.Global.SetOwned("models", vm.st.table(tableModels, sh.secModelsProxy, 0))
}

// InstallAliases sets one global per declared alias, after the shared
// library replay so aliases win over same-named library globals.
func (vm *VM) InstallAliases(tools []ToolHandle, models []ModelHandle) {
	for i := range tools {
		h := tools[i]
		h.Parameters = nil
		vm.L.G.Global.RawSetString(h.Alias, vm.toolHandle(h))
	}
	for i := range models {
		vm.L.G.Global.RawSetString(models[i].Alias, vm.modelHandle(models[i]))
	}
}

// ---- handles ----

// boxed wraps a copy of v in a userdata with meta, so Lua sees a read-only
// object whose fields the metatable serves.
func boxed[T any](L *lua.LState, v T, meta *lua.LTable) *lua.LUserData {
	ud := L.NewUserData()
	ud.Value = &v
	ud.Metatable = meta
	return ud
}

func (vm *VM) toolHandle(h ToolHandle) *lua.LUserData {
	return boxed(vm.L, h, vm.lib.toolMeta)
}

func toolIndex(L *lua.LState) int {
	h := L.CheckUserData(1).Value.(*ToolHandle)
	switch L.CheckString(2) {
	case "name":
		L.Push(lua.LString(h.Alias))
	case "description":
		L.Push(lua.LString(h.Description))
	case "wire_name":
		L.Push(lua.LString(h.WireName))
	case "untrusted":
		L.Push(lua.LFalse)
	case "parameters":
		var v any
		if len(h.Parameters) > 0 {
			_ = json.Unmarshal(h.Parameters, &v)
		}
		if v == nil {
			L.Push(L.CreateTable(0, 0))
		} else {
			L.Push(vmOf(L).FromData(v))
		}
	default:
		L.Push(lua.LNil)
	}
	return 1
}

func toolString(L *lua.LState) int {
	L.Push(lua.LString("Tool(" + L.CheckUserData(1).Value.(*ToolHandle).Alias + ")"))
	return 1
}

func frozen(kind string) lua.LGFunction {
	return func(L *lua.LState) int {
		L.RaiseError("%s objects are frozen: cannot assign field %q", kind, L.ToStringMeta(L.Get(2)).String())
		return 0
	}
}

func (vm *VM) modelHandle(h ModelHandle) *lua.LUserData {
	return boxed(vm.L, h, vm.lib.modelMeta)
}

func modelIndex(infer lua.LValue) lua.LGFunction {
	return func(L *lua.LState) int {
		h := L.CheckUserData(1).Value.(*ModelHandle)
		switch L.CheckString(2) {
		case "name":
			L.Push(lua.LString(h.Alias))
		case "model_id":
			L.Push(lua.LString(h.ModelID))
		case "description":
			L.Push(lua.LString(h.Description))
		case "context":
			L.Push(lua.LNumber(h.Context))
		case "thinking":
			if h.Thinking == nil {
				L.Push(lua.LNil)
			} else {
				L.Push(lua.LBool(*h.Thinking))
			}
		case "temperature":
			if h.Temperature == nil {
				L.Push(lua.LNil)
			} else {
				L.Push(lua.LNumber(*h.Temperature))
			}
		case "max_tokens":
			if h.MaxTokens == nil {
				L.Push(lua.LNil)
			} else {
				L.Push(lua.LNumber(*h.MaxTokens))
			}
		case "dialect":
			L.Push(lua.LString(h.Dialect))
		case "infer":
			L.Push(infer)
		default:
			L.Push(lua.LNil)
		}
		return 1
	}
}

func modelString(L *lua.LState) int {
	L.Push(lua.LString("Model(" + L.CheckUserData(1).Value.(*ModelHandle).Alias + ")"))
	return 1
}

func targetArg(L *lua.LState) string {
	s, ok := L.Get(1).(lua.LString)
	if !ok {
		L.RaiseError("section target must be a string, got %s", luaTypeName(L.Get(1)))
	}
	return string(s)
}

func (vm *VM) luaJump(L *lua.LState) int {
	switch vm.phase {
	case phaseShared:
		vm.fatal = &LuaError{Msg: "jump is not available during shared library load"}
		L.RaiseError("jump is not available during shared library load")
	case phaseLocalTool:
		// jump is nil inside handlers; this catches a handler that
		// captured it earlier, whose jump would otherwise be dropped
		// silently when the next chunk starts.
		L.RaiseError("jump is not available inside a local tool handler: a handler cannot leave its section; return a result and jump after the prose block")
	}
	target := targetArg(L)
	tok, err := vm.host.Jump(target)
	if err != nil {
		vm.raise(err)
	}
	vm.jumped, vm.jumpTo = true, tok
	ud := L.NewUserData()
	ud.Value = &jumpSignal{}
	L.Error(ud, 0)
	return 0
}

func (vm *VM) luaExecute(L *lua.LState) int {
	target := targetArg(L)
	var input *string
	switch v := L.Get(2).(type) {
	case *lua.LNilType:
	case lua.LString:
		s := string(v)
		input = &s
	default:
		L.RaiseError("execute input must be a string, got %s", luaTypeName(v))
	}
	var out string
	var err error
	vm.waitNested(func() { out, err = vm.host.Execute(vm.ctx, target, input) })
	if err != nil && errors.Is(err, ErrSpeculationStopped) {
		// The chain's attempt stopped: so does this one, or pcall here
		// could catch the stop and the attempt carry on without the chain.
		vm.stopSpeculation()
	}
	if err != nil {
		vm.raise(err)
	}
	L.Push(lua.LString(out))
	return 1
}

func (vm *VM) luaListFromSection(L *lua.LState) int {
	items, err := vm.host.ListFromSection(targetArg(L))
	if err != nil {
		vm.raise(err)
	}
	t := L.CreateTable(len(items), 0)
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(it))
	}
	L.Push(t)
	return 1
}

func (vm *VM) luaFanout(L *lua.LState) int {
	worker := targetArg(L)
	coll, ok := vm.tableArg(L.Get(2))
	if !ok {
		L.RaiseError("fanout's second parameter is a collection; for a list section use list_from_section(heading)")
	}
	members, err := vm.fanoutMembers(coll)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	var results []FanoutResult
	vm.wait(func() { results, err = vm.host.Fanout(vm.ctx, worker, members) })
	if err != nil {
		vm.raise(err)
	}
	out := L.CreateTable(len(results), 0)
	for i := range results {
		out.RawSetInt(i+1, vm.fanoutResult(results[i]))
	}
	L.Push(out)
	return 1
}

// fanoutMembers converts a collection: the array part in order, then the
// other keys (sorted, for a stable order) as {key=..., value=...} pairs.
func (vm *VM) fanoutMembers(coll *lua.LTable) ([]any, error) {
	c := converter{vm: vm}
	n := 0
	for coll.RawGetInt(n+1) != lua.LNil {
		n++
	}
	members := make([]any, 0, n)
	for i := 1; i <= n; i++ {
		v := coll.RawGetInt(i)
		d, err := c.toData(v, fmt.Sprintf("fanout member %d", i), 0)
		if err != nil {
			return nil, fmt.Errorf("fanout collection member at index %d is a %s; members must be data", i, luaTypeName(v))
		}
		members = append(members, d)
	}
	type pair struct {
		key  lua.LValue
		name string
		val  lua.LValue
	}
	var rest []pair
	var kerr error
	coll.ForEach(func(k, v lua.LValue) {
		if kerr != nil {
			return
		}
		if num, ok := k.(lua.LNumber); ok {
			if i := int(num); float64(i) == float64(num) && i >= 1 && i <= n {
				return
			}
		}
		switch k.(type) {
		case lua.LString, lua.LNumber, lua.LBool:
		default:
			kerr = fmt.Errorf("fanout collection key must be a string, number, or boolean, got %s", luaTypeName(k))
			return
		}
		rest = append(rest, pair{k, keyString(k), v})
	})
	if kerr != nil {
		return nil, kerr
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].name < rest[j].name })
	for _, p := range rest {
		d, err := c.toData(p.val, "fanout member", 0)
		if err != nil {
			return nil, fmt.Errorf("fanout collection member at index %s is a %s; members must be data", p.name, luaTypeName(p.val))
		}
		var key any
		switch kv := p.key.(type) {
		case lua.LString:
			key = string(kv)
		case lua.LNumber:
			key = float64(kv)
		case lua.LBool:
			key = bool(kv)
		}
		members = append(members, &Table{Hash: map[string]any{"key": key, "value": d}})
	}
	return members, nil
}

// keyString renders a Lua key for messages and ordering.
func keyString(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return FormatNumber(float64(n))
	}
	return v.String()
}

func (vm *VM) fanoutResult(r FanoutResult) *lua.LUserData {
	return boxed(vm.L, r, vm.lib.resultMeta)
}

func resultIndex(L *lua.LState) int {
	r := L.CheckUserData(1).Value.(*FanoutResult)
	switch L.CheckString(2) {
	case "text":
		L.Push(lua.LString(r.Text))
	case "ok":
		L.Push(lua.LBool(r.OK))
	case "exhausted":
		L.Push(lua.LBool(r.Exhausted))
	case "item":
		L.Push(vmOf(L).FromData(r.Item))
	default:
		L.Push(lua.LNil)
	}
	return 1
}

func resultString(L *lua.LState) int {
	L.Push(lua.LString(L.CheckUserData(1).Value.(*FanoutResult).Text))
	return 1
}
