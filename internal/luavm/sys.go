package luavm

import (
	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
	"github.com/promptforge-go/promptforge/internal/prompt"
)

// sysState is the sealed sys table's content: the fixed fields plus the
// two that prose blocks add.
type sysState struct {
	Sys
	model     string
	hasModel  bool
	finish    string
	hasFinish bool // reply_finish_reason exists (after a prose inference)
	finishSet bool // and is not nil
}

// SetModel adds sys.model (the catalog id of the section's model).
func (vm *VM) SetModel(id string) {
	vm.sys.model, vm.sys.hasModel = id, true
}

// SetFinishReason sets sys.reply_finish_reason; "" means the backend sent
// none, which reads as nil.
func (vm *VM) SetFinishReason(reason string) {
	vm.sys.hasFinish = true
	vm.sys.finish, vm.sys.finishSet = reason, reason != ""
}

// SysField returns a sys field as data: ok is false when the field does not
// exist here (unknown, or not yet set).
func (vm *VM) SysField(name string) (any, bool) {
	s := &vm.sys
	switch name {
	case "when":
		return s.When, true
	case "now":
		return s.Now, true
	case "id":
		return float64(s.ID), true
	case "section_name":
		return s.SectionName, true
	case "execution":
		return s.Execution, true
	case "section_count":
		return float64(s.SectionCount), true
	case "index":
		if s.Index > 0 {
			return float64(s.Index), true
		}
	case "model":
		if s.hasModel {
			return s.model, true
		}
	case "reply_finish_reason":
		if s.hasFinish {
			if !s.finishSet {
				return nil, true
			}
			return s.finish, true
		}
	}
	return nil, false
}

func (vm *VM) newSys() *lua.LTable {
	return vm.st.table(tableSys, vm.lib.sysMeta, 0)
}

func sysIndex(L *lua.LState) int {
	k, ok := L.Get(2).(lua.LString)
	if !ok {
		L.RaiseError("sys fields must be accessed by string key")
	}
	vm := vmOf(L)
	v, ok := vm.SysField(string(k))
	if !ok {
		L.RaiseError("unknown sys field '%s'", prompt.Preview(string(k)))
	}
	L.Push(vm.FromData(v))
	return 1
}

func sysNewIndex(L *lua.LState) int {
	k, ok := L.Get(2).(lua.LString)
	if !ok {
		L.RaiseError("sys fields must be accessed by string key")
	}
	L.RaiseError("sys is read-only; cannot set '%s'", prompt.Preview(string(k)))
	return 0
}
