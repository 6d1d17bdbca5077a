package luavm

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	lua "github.com/yuin/gopher-lua"
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

// InstallH1Tables (re)installs the live tools and models tables of the H1.
// The engine calls it before each H1 Lua block, so a block that replaced
// them does not break the next one.
func (vm *VM) InstallH1Tables() {
	sh := shared()
	vm.L.G.Global.RawSetString("tools", proxyTable(vm.L, sh.h1ToolsProxy, 0))
	vm.L.G.Global.RawSetString("models", proxyTable(vm.L, sh.h1ModelsProxy, 0))
}

func (vm *VM) installSectionTables(sh *sharedLib) {
	vm.L.G.Global.RawSetString("tools", proxyTable(vm.L, sh.secToolsProxy, 1))
	vm.L.G.Global.RawSetString("models", proxyTable(vm.L, sh.secModelsProxy, 0))
}

func (vm *VM) installControl(list []named) {
	for _, n := range list {
		vm.L.G.Global.RawSetString(n.name, n.v)
	}
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

// InstallToolCalls installs the read-only tools.calls table (at the
// section's first prose block).
func (vm *VM) InstallToolCalls() {
	L := vm.L
	tools, ok := L.G.Global.RawGetString("tools").(*lua.LTable)
	if !ok {
		return
	}
	calls := L.CreateTable(0, 0)
	calls.Metatable = shared().callsMeta
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
	return boxed(vm.L, h, shared().toolMeta)
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
	return boxed(vm.L, h, shared().modelMeta)
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

// ---- tools ----

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
		L.RaiseError("%s", perr)
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
		L.RaiseError("tools.add_local could not build the schema: %s", err.Error())
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
	err := L.PCall(1, 1, nil)
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

// ---- models ----

func (vm *VM) parseModelOpts(L *lua.LState, fn string, n int) *ModelOpts {
	v := L.Get(n)
	if v == lua.LNil {
		return nil
	}
	t, ok := vm.tableArg(v)
	if !ok {
		L.RaiseError("%s opts must be a table when provided, got %s", fn, luaTypeName(v))
	}
	opts := &ModelOpts{}
	var perr string
	posInt := func(key string, v lua.LValue) (int64, bool) {
		num, ok := v.(lua.LNumber)
		f := float64(num)
		if !ok || f != math.Trunc(f) || f < 0 || f > math.MaxUint32 {
			perr = fmt.Sprintf("%s opts.%s must be a non-negative integer", fn, key)
			return 0, false
		}
		if f == 0 {
			perr = fmt.Sprintf("%s opts.%s must be greater than zero", fn, key)
			return 0, false
		}
		return int64(f), true
	}
	t.ForEach(func(k, v lua.LValue) {
		if perr != "" {
			return
		}
		key, ok := k.(lua.LString)
		if !ok {
			perr = fmt.Sprintf("%s opts keys must be strings, got %s", fn, luaTypeName(k))
			return
		}
		switch string(key) {
		case "thinking":
			b, ok := v.(lua.LBool)
			if !ok {
				perr = fmt.Sprintf("%s opts.thinking must be a boolean", fn)
				return
			}
			bv := bool(b)
			opts.Thinking = &bv
		case "context":
			if n, ok := posInt("context", v); ok {
				c := uint32(n)
				opts.Context = &c
			}
		case "max_tokens":
			if n, ok := posInt("max_tokens", v); ok {
				m := int(n)
				opts.MaxTokens = &m
			}
		case "temperature":
			num, ok := v.(lua.LNumber)
			f := float64(num)
			switch {
			case !ok:
				perr = fmt.Sprintf("%s opts.temperature is invalid: expected a number, got %s", fn, luaTypeName(v))
			case math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 2:
				perr = fmt.Sprintf("%s opts.temperature is invalid: %s is not a finite number between 0 and 2", fn, FormatNumber(f))
			default:
				opts.Temperature = &f
			}
		default:
			perr = fmt.Sprintf("unknown %s opts key %q", fn, string(key))
		}
	})
	if perr != "" {
		L.RaiseError("%s", perr)
	}
	return opts
}

func (vm *VM) modelsNeed(L *lua.LState) int {
	if L.GetTop() > 3 {
		L.RaiseError("models.need expects at most three arguments")
	}
	alias, ok1 := L.Get(1).(lua.LString)
	desc, ok2 := L.Get(2).(lua.LString)
	if !ok1 || !ok2 {
		L.RaiseError("models.need expects alias, description, and optional opts table")
	}
	if !ValidAlias(string(alias)) {
		L.RaiseError("invalid model alias %q: expected [A-Za-z][A-Za-z0-9_-]{0,63}", string(alias))
	}
	opts := vm.parseModelOpts(L, "models.need", 3)
	var h ModelHandle
	var err error
	vm.wait(func() { h, err = vm.host.NeedModel(vm.ctx, string(alias), string(desc), opts) })
	if err != nil {
		vm.raise(err)
	}
	L.Push(vm.modelHandle(h))
	return 1
}

func (vm *VM) modelsDefault(L *lua.LState) int {
	top := L.GetTop()
	if top > 3 {
		L.RaiseError("models.default expects an alias, or an alias, description and optional opts table")
	}
	alias, ok := L.Get(1).(lua.LString)
	if !ok {
		if ud, isUD := L.Get(1).(*lua.LUserData); isUD {
			if h, isModel := ud.Value.(*ModelHandle); isModel && top == 1 {
				alias, ok = lua.LString(h.Alias), true
			}
		}
	}
	if !ok {
		L.RaiseError("models.default expects an alias string, got %s", luaTypeName(L.Get(1)))
	}
	var desc *string
	var opts *ModelOpts
	if top >= 2 {
		d, ok := L.Get(2).(lua.LString)
		if !ok {
			L.RaiseError("models.default description must be a string, got %s", luaTypeName(L.Get(2)))
		}
		if !ValidAlias(string(alias)) {
			L.RaiseError("invalid model alias %q: expected [A-Za-z][A-Za-z0-9_-]{0,63}", string(alias))
		}
		s := string(d)
		desc = &s
		opts = vm.parseModelOpts(L, "models.default", 3)
	}
	var h ModelHandle
	var err error
	vm.wait(func() { h, err = vm.host.DefaultModel(vm.ctx, string(alias), desc, opts) })
	if err != nil {
		vm.raise(err)
	}
	L.Push(vm.modelHandle(h))
	return 1
}

func modelAliasArg(L *lua.LState, fn string) string {
	switch x := L.Get(1).(type) {
	case lua.LString:
		return string(x)
	case *lua.LUserData:
		if h, ok := x.Value.(*ModelHandle); ok {
			return h.Alias
		}
	}
	L.RaiseError("%s expects a model alias string, got %s", fn, luaTypeName(L.Get(1)))
	return ""
}

func (vm *VM) modelsUse(L *lua.LState) int {
	h, err := vm.host.UseModel(modelAliasArg(L, "models.use"))
	if err != nil {
		vm.raise(err)
	}
	L.Push(vm.modelHandle(h))
	return 1
}

func (vm *VM) modelsGet(L *lua.LState) int {
	h, err := vm.host.GetModel(modelAliasArg(L, "models.get"))
	if err != nil {
		vm.raise(err)
	}
	L.Push(vm.modelHandle(h))
	return 1
}

func (vm *VM) modelsInfer(L *lua.LState) int {
	p, ok := L.Get(1).(lua.LString)
	if !ok {
		L.RaiseError("models.infer expects a prompt string, got %s", luaTypeName(L.Get(1)))
	}
	if L.GetTop() > 1 && L.Get(2) != lua.LNil {
		L.RaiseError("models.infer takes only a prompt: per-call options are not supported (set them in models.need)")
	}
	return vm.infer(L, nil, string(p))
}

func (vm *VM) handleInfer(L *lua.LState) int {
	ud, ok := L.Get(1).(*lua.LUserData)
	var h *ModelHandle
	if ok {
		h, ok = ud.Value.(*ModelHandle)
	}
	if !ok {
		L.RaiseError("infer must be called as a method: handle:infer(prompt)")
	}
	p, ok := L.Get(2).(lua.LString)
	if !ok {
		L.RaiseError("infer expects a prompt string, got %s", luaTypeName(L.Get(2)))
	}
	if L.GetTop() > 2 && L.Get(3) != lua.LNil {
		L.RaiseError("infer takes only a prompt: per-call options are not supported (set them in models.need)")
	}
	hc := *h
	return vm.infer(L, &hc, string(p))
}

func (vm *VM) infer(L *lua.LState, h *ModelHandle, prompt string) int {
	var out string
	var err error
	vm.wait(func() { out, err = vm.host.Infer(vm.ctx, h, prompt) })
	if err != nil {
		vm.raise(err)
	}
	L.Push(lua.LString(out))
	return 1
}

// ---- control ----

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
	vm.wait(func() { out, err = vm.host.Execute(vm.ctx, target, input) })
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
	return boxed(vm.L, r, shared().resultMeta)
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
