package luavm

// The models.* globals: models.need and models.default (H1), models.use,
// models.get and models.infer (sections), and handle:infer.

import (
	"fmt"
	"math"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

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
