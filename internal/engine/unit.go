package engine

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
)

// unit is one execution unit: the H1 pass, one section entry, or one
// fanout arm. It owns a VM and is that VM's luavm.Host.
type unit struct {
	r     *run
	frame frame
	sec   *prompt.Section // nil for the H1
	place place           // where sec sits (zero for the H1)
	name  string
	// vm is nil while a section entry's VM is pending (lazy) and once it
	// was released for the last block's model turn (released).
	vm *luavm.VM

	// id, parent and via place the unit in the run's structure for
	// Options.Tracer (see TraceEvent).
	id, parent uint32
	via        Via

	// visibleOverride replaces the visible set computed from place:
	// fanout arms see their caller's set (see armVisible).
	visibleOverride []place
	// incoming is the reply the unit was entered with; fanout arms
	// receive their caller's.
	incoming *string

	// Arms only: the member, its 1-based position, and the tag of the
	// arm's store writes.
	item    any
	hasItem bool
	index   int
	writer  store.Writer

	conv []gateway.Message

	added       []string
	addOverride map[string]string
	locals      []localTool
	calls       map[string]int
	proseSeen   bool
	useAlias    string
	model       *modelBinding // the prose model, fixed at the first prose block
	// finalReply is the section's reply once its VM was released for the
	// last block's model turn (releaseForTurn); released says it was.
	finalReply *string
	released   bool

	// lazy is the section VM not made yet (see machine); while it is
	// pending, the section's reply and finish reason are kept here, as Go
	// data, and given to the VM if it is made.
	lazy *pendingVM
}

// pendingVM is what a section entry's VM is made from, kept until the
// section first needs it (machine). A section of prose alone (no Lua
// block, no template that reads Lua state, no shared library) never makes
// one: making and closing it was about a quarter of the bytes a
// one-turn prose run allocated (docs/benchmarks.md, "Prose runs at scale").
type pendingVM struct {
	// ctx is the section's context, which the VM's Lua runs under; it is
	// kept only until the VM is made, within the section's own call.
	ctx context.Context
	id  int
	at  time.Time // the section's start: sys.now, as if made then
	v   *luavm.Var

	reply     *string // the reply global as it stands
	rebound   bool    // a turn bound reply after the section started
	finish    string  // sys.reply_finish_reason, once a turn set it
	hasFinish bool
}

type localTool struct {
	alias, description string
	schema             json.RawMessage
}

// newUnit prepares the unit for the section at p; the zero place is the
// H1.
func (r *run) newUnit(fr frame, p place, via Via) *unit {
	u := &unit{r: r, frame: fr, place: p, name: r.p.Title, id: r.units.Add(1), parent: fr.parent, via: via}
	if p.slice != nil {
		u.sec = p.section()
		u.name = u.sec.Name
	}
	return u
}

func (u *unit) visible() []place {
	if u.visibleOverride != nil {
		return u.visibleOverride
	}
	return visibleFrom(u.place)
}

// armForwarded are the observations a fanout arm reports. An arm's own
// lifecycle (section, chunk, teardown, scope and store events) stays
// inside it: callers follow arms through the Fanout arm events, while
// turns, tool calls and log lines still reach the run's observer, so turn
// counts and progress include arms.
var armForwarded = map[Detail]bool{
	ModelTurnCompleted: true, ModelTurnFailed: true, ModelTurnTruncated: true,
	ToolCallSucceeded: true, ToolCallFailed: true,
	FanoutArmStarted: true, FanoutArmSucceeded: true, FanoutArmExhausted: true,
	FanoutArmFailed: true, FanoutArmCancelled: true,
}

func (u *unit) observe(d Detail) {
	u.emit(d, "", "", nil)
}

// cancelledBy is the cancellation error of a wait on ctx: the run's
// cancellation, or the abort of a fanout whose sibling arm failed.
func cancelledBy(ctx context.Context) *Error {
	return &Error{Kind: KindCancelled, Err: &luavm.CancelledError{Cause: context.Cause(ctx)}}
}

func (u *unit) vmOptions(kind luavm.Kind, id int, now time.Time, when string, reply *string, v *luavm.Var) luavm.Options {
	return luavm.Options{
		Kind:   kind,
		Host:   u,
		Store:  u.r.store,
		Guard:  u.r.guard,
		Args:   u.frame.args,
		Params: u.r.cfg.Params,
		Sys: luavm.Sys{
			When: when, Now: now.UTC().Format(time.RFC3339), ID: id, SectionName: u.name,
			Execution: u.r.cfg.Execution, SectionCount: len(u.r.p.Sections), Index: u.index,
		},
		Var:     v,
		Reply:   reply,
		Limits:  u.r.cfg.Limits.Limits,
		Item:    u.item,
		HasItem: u.hasItem,
		Writer:  u.writer,
		Memory:  u.r.memory,

		SpeculateUntil: u.r.cfg.SpeculateUntil,
	}
}

// teardown closes the VM; teardown is observed whether or not the unit
// succeeded.
func (u *unit) teardown() {
	u.observe(LuaTeardownStarted)
	u.lazy = nil
	if u.vm != nil {
		u.vm.Close()
	}
	u.observe(LuaTeardownSucceeded)
}

// runH1 runs the H1 blocks once (prompt-language §3.2). It ends as a walk
// does, with a return or the rolling reply; unless it returned, it also gives
// the H1's var, which seeds the top-level walk.
func (u *unit) runH1(ctx context.Context) (walkEnd, *luavm.Var, error) {
	r := u.r
	defer u.teardown()
	if len(r.p.H1) == 0 {
		return walkEnd{}, luavm.NewVar(), nil
	}
	now := r.now()
	u.vm = luavm.New(ctx, u.vmOptions(luavm.KindH1, 0, now, now.UTC().Format(time.RFC3339), nil, nil))
	var reply *string
	var err error
	for _, b := range r.p.H1 {
		if b.Kind == prompt.BlockLua {
			u.vm.InstallH1Tables()
			u.observe(LuaChunkStarted)
			out, cerr := u.vm.RunChunk(b.Lua)
			if r.bind.recorded != nil {
				u.observe(LuaChunkFailed)
				return walkEnd{}, nil, r.bind.recorded
			}
			if cerr != nil {
				u.observe(LuaChunkFailed)
				return walkEnd{}, nil, cerr
			}
			u.observe(LuaChunkSucceeded)
			if out.Returned {
				return walkEnd{returned: true, value: out.Value}, nil, nil
			}
			if reply, err = u.vm.Reply(); err != nil {
				return walkEnd{}, nil, err
			}
			continue
		}
		if err := u.prose(ctx, b, false); err != nil {
			return walkEnd{}, nil, err
		}
		if reply, err = u.vm.Reply(); err != nil {
			return walkEnd{}, nil, err
		}
	}
	v, err := u.vm.Var()
	if err != nil {
		return walkEnd{}, nil, err
	}
	return walkEnd{reply: reply}, v, nil
}

// runSection runs one section entry (prompt-language §3.4).
func (u *unit) runSection(ctx context.Context, reply *string, v *luavm.Var) (flow, error) {
	r := u.r
	id := int(r.ids.Add(1))
	u.incoming = reply
	u.observe(SectionStarted)
	if r.p.Shared != nil {
		// The shared library runs at the section's start, whatever the
		// section needs after.
		u.vm = luavm.New(ctx, u.vmOptions(luavm.KindSection, id, r.now(), r.walkAt, reply, v))
	} else {
		u.lazy = &pendingVM{ctx: ctx, id: id, at: r.now(), v: v, reply: reply}
	}
	f, err := u.blocks(ctx, reply)
	u.teardown()
	if err != nil {
		if r.tracing() {
			u.emit(SectionFailed, "", "", errInfo(err))
		}
		return flow{}, err
	}
	u.observe(SectionFinished)
	return f, nil
}

// blocks runs the shared library and the section's blocks in u's VM.
func (u *unit) blocks(ctx context.Context, reply *string) (flow, error) {
	r := u.r
	u.observe(LuaSharedLoadStarted)
	if u.vm != nil {
		if err := u.vm.RunShared(r.p.Shared); err != nil {
			u.observe(LuaSharedLoadFailed)
			return flow{}, err
		}
	}
	u.observe(LuaSharedLoadSucceeded)
	if u.vm != nil {
		u.vm.InstallAliases(r.bind.aliasHandles())
	}

	rolling := reply
	for i, b := range u.sec.Blocks {
		if b.Kind == prompt.BlockLua {
			u.machine()
			u.observe(LuaChunkStarted)
			out, err := u.vm.RunChunk(b.Lua)
			if err != nil {
				u.observe(LuaChunkFailed)
				return flow{}, err
			}
			u.observe(LuaChunkSucceeded)
			if out.Returned {
				if _, err := u.vm.Var(); err != nil {
					return flow{}, err
				}
				return flow{returned: true, value: out.Value}, nil
			}
			if rolling, err = u.vm.Reply(); err != nil {
				return flow{}, err
			}
			if out.Jumped {
				if _, err := u.vm.Var(); err != nil {
					return flow{}, err
				}
				t := out.Target.(place)
				return flow{reply: rolling, jump: &t}, nil
			}
			continue
		}
		if err := u.prose(ctx, b, i == len(u.sec.Blocks)-1); err != nil {
			return flow{}, err
		}
		if u.released {
			// The section's last block released the VM for its model
			// turn (prose): nothing runs in it after, and var was checked
			// before the turn, as Var would check it here.
			return flow{reply: u.finalReply}, nil
		}
		var err error
		if rolling, err = u.reply(); err != nil {
			return flow{}, err
		}
	}
	if u.vm != nil {
		if _, err := u.vm.Var(); err != nil {
			return flow{}, err
		}
	}
	return flow{reply: rolling}, nil
}

// machine makes the section's VM if it is still pending: from the options
// the section started with, its aliases installed as blocks installs them,
// and what the section did without it (its tool calls table and model
// once it reached prose, the reply and finish reason of its turns) given
// to it, so that the VM's state is what it would have been had it been
// made at the section's start. It returns the VM (nil once released).
func (u *unit) machine() *luavm.VM {
	l := u.lazy
	if l == nil {
		return u.vm
	}
	u.lazy = nil
	r := u.r
	// Made with the reply the section started with, and a reply a turn
	// bound set after the aliases, as SetReply set it: a global the
	// start lacked comes after them in the globals' order.
	u.vm = luavm.New(l.ctx, u.vmOptions(luavm.KindSection, l.id, l.at, r.walkAt, u.incoming, l.v))
	u.vm.InstallAliases(r.bind.aliasHandles())
	if u.proseSeen {
		u.proseGlobals()
	}
	if l.hasFinish {
		u.vm.SetFinishReason(l.finish)
	}
	if l.rebound {
		u.vm.SetReply(l.reply)
	}
	return u.vm
}

// proseGlobals gives the section's VM what its first prose block sets:
// the tool calls table and the section's model. prose calls it then, or
// machine when it makes the VM later.
func (u *unit) proseGlobals() {
	u.vm.InstallToolCalls()
	if u.model != nil {
		u.vm.SetModel(u.model.model.ID)
	}
}

// reply is the section's reply global: the VM's, or the pending one's.
func (u *unit) reply() (*string, error) {
	if u.lazy != nil {
		return u.lazy.reply, nil
	}
	return u.vm.Reply()
}

// resolve is the template resolver of a unit's prose; in a section, a
// template that reads a path makes the VM (the H1's is never pending).
func (u *unit) resolve(p prompt.Path) (string, error) {
	return u.machine().Resolve(p)
}

// prose runs one prose block: scope, substitution, model rounds, reply
// binding. last is set for a section's last block: see releaseForTurn.
func (u *unit) prose(ctx context.Context, b prompt.Block, last bool) error {
	r := u.r
	// A script that replaced var fails here, before the model is called,
	// whether or not the prose names var (prompt-language §2.4: the host's
	// next read). A VM not made yet ran no script.
	if u.vm != nil {
		if _, err := u.vm.Var(); err != nil {
			return err
		}
	}
	var sc *scope
	if u.sec == nil {
		sc = u.h1Scope()
	} else {
		first := !u.proseSeen
		u.proseSeen = true
		if first {
			u.calls = map[string]int{}
			if mb := u.sectionModel(); mb != nil {
				u.model = mb
			}
			// A pending VM gets them when it is made (machine).
			if u.vm != nil {
				u.proseGlobals()
			}
		}
		u.observe(ToolScopeValidationStarted)
		var err error
		sc, err = u.sectionScope()
		if err != nil {
			u.observe(ToolScopeValidationFailed)
			return err
		}
		u.observe(ToolScopeValidationSucceeded)
		for _, a := range sc.order {
			if _, ok := u.calls[a]; !ok {
				u.calls[a] = 0
			}
		}
	}
	text, err := prompt.SubstituteMax(b.Text, u.resolve, r.cfg.Limits.Limits.MaxStringBytes)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return nil
	}
	mb := u.model
	if u.sec == nil {
		mb = r.bind.model(r.bind.defModel)
	}
	if mb == nil {
		return bindingErr("model binding required for section %s", u.name)
	}
	if !r.cfg.SpeculateUntil.IsZero() {
		return speculationStopped()
	}
	released := last && u.releaseForTurn(sc)
	res, err := u.loop(ctx, mb, sc, text, !b.LoopCapable)
	if err != nil {
		return err
	}
	if released {
		if res.text != nil {
			u.observe(LuaReplyBindingStarted)
			u.finalReply = res.text
			u.observe(LuaReplyBindingSucceeded)
		}
		return nil
	}
	if l := u.lazy; l != nil {
		l.finish, l.hasFinish = res.finish, true
		if res.text != nil {
			u.observe(LuaReplyBindingStarted)
			l.reply, l.rebound = res.text, true
			u.observe(LuaReplyBindingSucceeded)
		}
		return nil
	}
	if u.sec != nil {
		u.vm.SetFinishReason(res.finish)
	}
	if res.text != nil {
		u.observe(LuaReplyBindingStarted)
		u.vm.SetReply(res.text)
		u.observe(LuaReplyBindingSucceeded)
	}
	return nil
}

// releaseForTurn closes the section's VM before the model turn of its last
// block when nothing needs it again: no Lua block follows, and no local
// tool (a Lua function) is in scope for the turn to call. What the section
// hands on is then known without it: the reply is the turn's text, or the
// reply global as it stands, read here; var is Go data, already checked
// at the start of this block. A model turn is the long wait of a run, and
// the VM was most of a waiting run's heap (docs/benchmarks.md, "Prose runs
// at scale"). The teardown events stay where they were (runSection). It
// reports whether it released the VM; a reply global it cannot read keeps
// the VM, so that the error, if any, comes where it came before.
func (u *unit) releaseForTurn(sc *scope) bool {
	if u.sec == nil || len(sc.local) > 0 {
		return false
	}
	reply, err := u.reply()
	if err != nil {
		return false
	}
	u.finalReply, u.released = reply, true
	if u.lazy != nil {
		// Never made: nothing to close.
		u.lazy = nil
		return true
	}
	u.vm.Close()
	u.vm = nil
	return true
}

// sectionModel is the section's model: models.use, else the default.
func (u *unit) sectionModel() *modelBinding {
	b := &u.r.bind
	if u.useAlias != "" {
		return b.model(u.useAlias)
	}
	if b.defModel != "" {
		return b.model(b.defModel)
	}
	return nil
}
