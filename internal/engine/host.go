package engine

// The unit's implementation of luavm.Host: what a VM's bindings reach in
// the engine.

import (
	"context"
	"encoding/json"

	"github.com/promptforge-go/promptforge/internal/luavm"
)

func (u *unit) Note(n luavm.Note, msg string) {
	if n == luavm.NoteLog {
		u.emit(DetailLua, "", "Lua: "+msg, nil)
		return
	}
	if d, ok := noteDetails[n]; ok {
		u.observe(d)
	}
}

var noteDetails = map[luavm.Note]Detail{
	luavm.NoteStoreWriteSucceeded:        StoreWriteSucceeded,
	luavm.NoteStoreWriteFailed:           StoreWriteFailed,
	luavm.NoteStoreAppendSucceeded:       StoreAppendSucceeded,
	luavm.NoteStoreAppendFailed:          StoreAppendFailed,
	luavm.NoteStoreReadSucceeded:         StoreReadSucceeded,
	luavm.NoteStoreReadFailed:            StoreReadFailed,
	luavm.NoteStoreReadNumberedSucceeded: StoreReadNumberedSucceeded,
	luavm.NoteStoreReadNumberedFailed:    StoreReadNumberedFailed,
	luavm.NoteStoreReplaceSucceeded:      StoreReplaceSucceeded,
	luavm.NoteStoreReplaceFailed:         StoreReplaceFailed,
	luavm.NoteStoreDeleteSucceeded:       StoreDeleteSucceeded,
	luavm.NoteStoreDeleteFailed:          StoreDeleteFailed,
	luavm.NoteStoreGlobSucceeded:         StoreGlobSucceeded,
	luavm.NoteStoreGlobFailed:            StoreGlobFailed,
}

// The phase rules (tools.need only in the H1, tools.add only in sections,
// control globals only in sections, ...) are enforced by the VM, which
// binds stubs in place of the functions a phase may not call; the Host
// methods below are only reached from the phase they belong to.

func (u *unit) NeedTool(ctx context.Context, alias, description string, override *string) (luavm.ToolHandle, error) {
	h, err := u.r.bind.needTool(ctx, alias, description, override)
	u.r.noteNeed(ProbedNeed{Kind: NeedTool, Alias: alias, Description: description, Bound: u.r.bind.toolID(alias), Err: err})
	return h, err
}

func (u *unit) AlwaysTool(alias string, override *string) error {
	return u.r.bind.alwaysTool(alias, override)
}

func (u *unit) NeedModel(ctx context.Context, alias, description string, opts *luavm.ModelOpts) (luavm.ModelHandle, error) {
	mb, err := u.r.bind.needModel(ctx, alias, description, opts)
	u.r.noteNeed(ProbedNeed{Kind: NeedModel, Alias: alias, Description: description, Bound: mb.id(), Err: err})
	if err != nil {
		return luavm.ModelHandle{}, err
	}
	return mb.handle(), nil
}

func (u *unit) DefaultModel(ctx context.Context, alias string, description *string, opts *luavm.ModelOpts) (luavm.ModelHandle, error) {
	mb, err := u.r.bind.defaultModel(ctx, alias, description, opts)
	if description != nil {
		// Naming an alias models.need declared binds nothing new.
		u.r.noteNeed(ProbedNeed{Kind: NeedModel, Alias: alias, Description: *description, Default: true, Bound: mb.id(), Err: err})
	}
	if err != nil {
		return luavm.ModelHandle{}, err
	}
	return mb.handle(), nil
}

func (u *unit) AddTools(aliases []string, override *string) error {
	b := &u.r.bind
	for _, a := range aliases {
		if _, ok := b.tools[a]; !ok {
			return luavm.Scriptf("tools.add alias %q was not declared by tools.need", a)
		}
	}
	for _, a := range aliases {
		if override != nil {
			if u.addOverride == nil {
				u.addOverride = map[string]string{}
			}
			u.addOverride[a] = *override
		}
		if b.tools[a].always || indexOf(u.added, a) >= 0 {
			continue
		}
		u.added = append(u.added, a)
	}
	return nil
}

func (u *unit) AddLocalTool(alias, description string, schema json.RawMessage) error {
	if _, ok := u.r.bind.tools[alias]; ok {
		return luavm.Scriptf("tools.add_local alias %q duplicates a declared tool alias", alias)
	}
	for _, l := range u.locals {
		if l.alias == alias {
			return luavm.Scriptf("tools.add_local alias %q is already registered", alias)
		}
	}
	u.locals = append(u.locals, localTool{alias: alias, description: description, schema: schema})
	return nil
}

func (u *unit) ToolCalls(alias string) (int, error) {
	if n, ok := u.calls[alias]; ok {
		return n, nil
	}
	scope := make([]string, 0, len(u.calls))
	if sc, err := u.sectionScope(); err == nil {
		for _, a := range sc.order {
			if _, ok := u.calls[a]; ok {
				scope = append(scope, a)
			}
		}
	}
	suffix := " - check for typos or add it via tools.add"
	if _, declared := u.r.bind.tools[alias]; declared {
		suffix = " (alias was declared by tools.need but not added to this section's scope)"
	}
	return 0, luavm.Scriptf("tools.calls: %q is not in this section's tool scope; in-scope aliases: %s%s", alias, quoteIDs(scope), suffix)
}

func (u *unit) UseModel(alias string) (luavm.ModelHandle, error) {
	if u.useAlias != "" {
		return luavm.ModelHandle{}, luavm.Scriptf("models.use may be called at most once per section")
	}
	mb := u.r.bind.model(alias)
	if mb == nil {
		return luavm.ModelHandle{}, luavm.Scriptf("models.use alias %q was not declared by models.need", alias)
	}
	u.useAlias = alias
	return mb.handle(), nil
}

func (u *unit) GetModel(alias string) (luavm.ModelHandle, error) {
	mb := u.r.bind.model(alias)
	if mb == nil {
		return luavm.ModelHandle{}, luavm.Scriptf("models.get alias %q was not declared by models.need", alias)
	}
	return mb.handle(), nil
}

func (u *unit) Infer(ctx context.Context, h *luavm.ModelHandle, p string) (string, error) {
	b := &u.r.bind
	var mb *modelBinding
	switch {
	case h != nil:
		mb = b.model(h.Alias)
		if mb == nil {
			return "", luavm.Scriptf("model alias %q was not declared by models.need", h.Alias)
		}
	case u.sec == nil:
		mb = b.model(b.defModel)
	default:
		mb = u.sectionModel()
	}
	if mb == nil {
		return "", bindingErr("model binding required for section %s", u.name)
	}
	return u.infer(ctx, mb, p)
}

func (u *unit) Jump(target string) (any, error) {
	t, err := resolveTarget(u.visible(), target)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (u *unit) Execute(ctx context.Context, target string, input *string) (string, error) {
	return u.execute(ctx, target, input)
}

func (u *unit) ListFromSection(target string) ([]string, error) {
	return u.listFromSection(target)
}

func (u *unit) Fanout(ctx context.Context, worker string, members []any) ([]luavm.FanoutResult, error) {
	return u.fanout(ctx, worker, members)
}
