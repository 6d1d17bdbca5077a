package luavm

// The tools.* globals: tools.need and tools.always (H1), tools.add,
// tools.add_local and tools.calls (sections), and the dispatch of a
// local tool the model called.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

// ValidAlias reports whether s matches [A-Za-z][A-Za-z0-9_-]{0,63}.
func ValidAlias(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if i == 0 && !letter {
			return false
		}
		if !letter && !(c >= '0' && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// InstallToolCalls installs the read-only tools.calls table (at the
// section's first prose block).
func (vm *VM) InstallToolCalls() {
	L := vm.L
	tools, ok := L.G.Global.RawGetString("tools").(*lua.LTable)
	if !ok {
		return
	}
	calls := L.CreateTable(0, 0)
	calls.Metatable = vm.lib.callsMeta
	tools.RawSetString("calls", calls)
}

func callsIndex(L *lua.LState) int {
	k, ok := L.Get(2).(lua.LString)
	if !ok {
		L.RaiseError("tools.calls keys are tool aliases (strings), got %s", luaTypeName(L.Get(2)))
	}
	vm := vmOf(L)
	n, err := vm.host.ToolCalls(string(k))
	if err != nil {
		vm.raise(err)
	}
	L.Push(lua.LNumber(n))
	return 1
}

func optString(L *lua.LState, n int, what string) *string {
	switch v := L.Get(n).(type) {
	case *lua.LNilType:
		return nil
	case lua.LString:
		s := string(v)
		return &s
	default:
		L.RaiseError("%s must be a string, got %s", what, luaTypeName(v))
	}
	return nil
}

// tableArg reads a table argument: a Lua table, or var data copied into
// one (type() calls var data a table, so the API accepts it as one).
func (vm *VM) tableArg(v lua.LValue) (*lua.LTable, bool) {
	if t, ok := v.(*lua.LTable); ok {
		return t, true
	}
	if r, ok := varOf(v); ok {
		return vm.FromData(r.node).(*lua.LTable), true
	}
	return nil, false
}

func (vm *VM) toolsNeed(L *lua.LState) int {
	alias, ok1 := L.Get(1).(lua.LString)
	desc, ok2 := L.Get(2).(lua.LString)
	if !ok1 || !ok2 {
		L.RaiseError("tools.need expects an alias and a description (strings), got %s and %s", luaTypeName(L.Get(1)), luaTypeName(L.Get(2)))
	}
	if !ValidAlias(string(alias)) {
		L.RaiseError("invalid tool alias %q: expected [A-Za-z][A-Za-z0-9_-]{0,63}", string(alias))
	}
	override := optString(L, 3, "tools.need override")
	var h ToolHandle
	var err error
	vm.wait(func() { h, err = vm.host.NeedTool(vm.ctx, string(alias), string(desc), override) })
	if err != nil {
		vm.raise(err)
	}
	L.Push(vm.toolHandle(h))
	return 1
}

func (vm *VM) toolsAlways(L *lua.LState) int {
	alias, ok := aliasArg(L.Get(1))
	if !ok {
		L.RaiseError("tools.always expects a declared alias (string or Tool object), got %s", luaTypeName(L.Get(1)))
	}
	override := optString(L, 2, "tools.always override")
	if err := vm.host.AlwaysTool(alias, override); err != nil {
		vm.raise(err)
	}
	return 0
}

// aliasArg accepts an alias string or a Tool handle.
func aliasArg(v lua.LValue) (string, bool) {
	switch x := v.(type) {
	case lua.LString:
		return string(x), true
	case *lua.LUserData:
		if h, ok := x.Value.(*ToolHandle); ok {
			return h.Alias, true
		}
	}
	return "", false
}

func (vm *VM) toolsAdd(L *lua.LState) int {
	top := L.GetTop()
	if top == 0 {
		return 0
	}
	const shape = "tools.add expects strings, Tool objects, or arrays of either, got %s"
	first := L.Get(1)
	var aliases []string
	var override *string
	if t, ok := vm.tableArg(first); ok {
		if top >= 2 && L.Get(2) != lua.LNil {
			L.RaiseError("tools.add array form takes no override")
		}
		n := t.Len()
		aliases = make([]string, 0, n)
		for i := 1; i <= n; i++ {
			a, ok := aliasArg(t.RawGetInt(i))
			if !ok {
				L.RaiseError(shape, luaTypeName(t.RawGetInt(i)))
			}
			aliases = append(aliases, a)
		}
	} else {
		a, ok := aliasArg(first)
		if !ok {
			L.RaiseError(shape, luaTypeName(first))
		}
		aliases = []string{a}
		if top >= 2 {
			v := L.Get(2)
			if s, ok := v.(lua.LString); ok {
				str := string(s)
				override = &str
			} else if v != lua.LNil {
				L.RaiseError("tools.add override must be a string, got %s", luaTypeName(v))
			}
		}
		if top >= 3 {
			L.RaiseError("tools.add takes one alias plus an optional override, got extra %s", luaTypeName(L.Get(3)))
		}
	}
	if len(aliases) == 0 {
		return 0
	}
	if err := vm.host.AddTools(aliases, override); err != nil {
		vm.raise(err)
	}
	return 0
}

var localParamTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true}

func (vm *VM) toolsAddLocal(L *lua.LState) int {
	alias, ok := L.Get(1).(lua.LString)
	if !ok || !ValidAlias(string(alias)) {
		L.RaiseError("invalid tool alias %q: expected [A-Za-z][A-Za-z0-9_-]{0,63}", L.ToStringMeta(L.Get(1)).String())
	}
	desc, ok := L.Get(2).(lua.LString)
	if !ok {
		L.RaiseError("tools.add_local description must be a string, got %s", luaTypeName(L.Get(2)))
	}
	params, ok := vm.tableArg(L.Get(3))
	if !ok {
		L.RaiseError("tools.add_local params must be a table of name = type, got %s", luaTypeName(L.Get(3)))
	}
	handler, ok := L.Get(4).(*lua.LFunction)
	if !ok {
		L.RaiseError("tools.add_local handler must be a function, got %s", luaTypeName(L.Get(4)))
	}
	schema, err := localToolSchema(params)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	if err := vm.host.AddLocalTool(string(alias), string(desc), schema); err != nil {
		vm.raise(err)
	}
	if vm.locals == nil {
		vm.locals = make(map[string]*lua.LFunction)
	}
	vm.locals[string(alias)] = handler
	return 0
}

// localToolSchema is the JSON schema of a tools.add_local params table:
// each entry is name = "type" or name = {"type", "description"}, every
// parameter is required, and the error is the message to raise in Lua.
func localToolSchema(params *lua.LTable) (json.RawMessage, error) {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
	}
	props := map[string]prop{}
	var perr string
	params.ForEach(func(k, v lua.LValue) {
		if perr != "" {
			return
		}
		name, ok := k.(lua.LString)
		if !ok {
			perr = fmt.Sprintf("tools.add_local params keys must be parameter names (strings), got %s", luaTypeName(k))
			return
		}
		var p prop
		switch x := v.(type) {
		case lua.LString:
			p.Type = string(x)
		case *lua.LTable:
			t, ok1 := x.RawGetInt(1).(lua.LString)
			p.Type = string(t)
			if !ok1 {
				perr = fmt.Sprintf("tools.add_local param %q must be \"type\" or {\"type\", \"description\"}", string(name))
				return
			}
			if d, ok := x.RawGetInt(2).(lua.LString); ok {
				p.Description = string(d)
			}
		default:
			perr = fmt.Sprintf("tools.add_local param %q must be \"type\" or {\"type\", \"description\"}, got %s", string(name), luaTypeName(v))
			return
		}
		if !localParamTypes[p.Type] {
			perr = fmt.Sprintf("tools.add_local param %q has unsupported type %q (use string, integer, number or boolean)", string(name), p.Type)
			return
		}
		props[string(name)] = p
	})
	if perr != "" {
		return nil, errors.New(perr)
	}
	required := make([]string, 0, len(props))
	for k := range props {
		required = append(required, k)
	}
	sort.Strings(required)
	schema, err := json.Marshal(struct {
		Type       string          `json:"type"`
		Properties map[string]prop `json:"properties"`
		Required   []string        `json:"required"`
	}{"object", props, required})
	if err != nil {
		return nil, fmt.Errorf("tools.add_local could not build the schema: %w", err)
	}
	return schema, nil
}

// CallLocalTool runs a tools.add_local handler with the model's arguments.
// jump is removed for the duration (a handler cannot leave its section).
// The result is the handler's first return value as text ("" for nil).
func (vm *VM) CallLocalTool(alias string, args json.RawMessage) (string, error) {
	fn, ok := vm.locals[alias]
	if !ok {
		return "", fmt.Errorf("local tool %q is not registered in this section", alias)
	}
	var decoded any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &decoded); err != nil {
			return "", fmt.Errorf("local tool %q got arguments that are not JSON: %w", alias, err)
		}
	}
	if decoded == nil {
		decoded = map[string]any{}
	}
	L := vm.L
	g := L.G.Global
	savedJump := g.RawGetString("jump")
	g.RawSetString("jump", lua.LNil)
	prevPhase := vm.phase
	vm.phase = phaseLocalTool
	defer func() {
		g.RawSetString("jump", savedJump)
		vm.phase = prevPhase
	}()
	L.Push(fn)
	L.Push(vm.FromData(decoded))
	vm.fatal = nil
	prev := vm.budget.set(true)
	err := vm.pcall(1)
	vm.budget.set(prev)
	if cerr := vm.interrupted(); cerr != nil {
		if err == nil {
			L.Pop(1)
		}
		return "", cerr
	}
	if vm.fatal != nil {
		if err == nil {
			L.Pop(1)
		}
		return "", vm.fatal
	}
	if err != nil {
		return "", vm.translate(err)
	}
	ret := L.Get(-1)
	L.Pop(1)
	s, _, rerr := scalarResult(ret)
	if rerr != nil {
		return "", &LuaError{Msg: fmt.Sprintf("local tool %q must return a string, number, boolean or nil, got %s", alias, luaTypeName(ret))}
	}
	return s, nil
}
