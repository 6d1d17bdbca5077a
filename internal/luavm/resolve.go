package luavm

import (
	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"

	"github.com/promptforge-go/promptforge/internal/prompt"
)

// Resolve renders one {{ path }} placeholder against this VM: args, the
// reply global, the fanout item, var, sys, and any other first segment as a
// global of the VM viewed as JSON. It is the [prompt.Resolver] of prose
// blocks run in this VM.
func (vm *VM) Resolve(p prompt.Path) (string, error) {
	switch p.Head {
	case "args":
		return vm.cfg.Args, nil
	case "reply":
		r, err := vm.Reply()
		if err != nil {
			return "", err
		}
		if r == nil {
			return "", prompt.NilReplyError()
		}
		return *r, nil
	case "item":
		if !vm.cfg.HasItem {
			return "", prompt.NilItemError()
		}
		return RenderData(vm.cfg.Item)
	case "var":
		v, err := vm.Var()
		if err != nil {
			return "", err
		}
		return renderTablePath(p, v.root)
	case "sys":
		val, ok := vm.SysField(p.Keys[0])
		if !ok {
			return "", prompt.MissingKeyError(p)
		}
		return prompt.RenderPath(p, map[string]any{p.Keys[0]: val})
	}
	g := vm.L.G.Global.RawGetString(p.Head)
	switch x := g.(type) {
	case *lua.LNilType:
		return "", prompt.UnknownNamespaceError(p)
	case *lua.LFunction:
		return "", prompt.NotJSONError(p, "a function")
	case *lua.LState:
		return "", prompt.NotJSONError(p, "a thread")
	case *lua.LUserData:
		if _, ok := varOf(x); !ok {
			return "", prompt.NotJSONError(p, "userdata")
		}
	}
	d, err := vm.ToData(g, p.Head)
	if err != nil {
		return "", &prompt.TemplateError{Kind: prompt.TplSerialize, Err: err,
			Msg: "{{ " + prompt.Preview(p.Raw) + " }} cannot be rendered: " + err.Error()}
	}
	return prompt.RenderPath(p, ToPlain(d))
}

// renderTablePath walks object keys through var's data without converting
// the whole clipboard; anything unusual falls back to prompt.RenderPath on
// a plain copy so its messages stay the single source of wording.
func renderTablePath(p prompt.Path, root *Table) (string, error) {
	var cur any = root
	for _, k := range p.Keys {
		t, ok := cur.(*Table)
		if !ok || t.Hash == nil {
			return prompt.RenderPath(p, ToPlain(root))
		}
		next, ok := t.Hash[k]
		if !ok {
			return prompt.RenderPath(p, ToPlain(root))
		}
		cur = next
	}
	if cur == nil {
		return "", prompt.NullValueError(p)
	}
	return RenderData(cur)
}
