package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/store"
)

// errSiblingFailed is the cause a fanout cancels its remaining arms with
// once one arm has failed.
var errSiblingFailed = errors.New("another arm of the same fanout failed")

// fanoutCall is one fanout(worker, collection) call: the worker's place,
// what every arm starts from, and the arms' shared store token.
type fanoutCall struct {
	caller   *unit
	worker   place
	vis      []place // the arms' visible set
	members  []any
	v        *luavm.Var // the caller's var at call time
	incoming *string    // the caller section's incoming reply
	token    uint64
}

// fanout runs worker once per member, up to Limits.FanoutConcurrency arms at
// a time, and returns the results in collection order (prompt-language §7).
// It returns only once every arm it started has ended.
func (u *unit) fanout(ctx context.Context, worker string, members []any) ([]luavm.FanoutResult, error) {
	if u.frame.depth+1 > MaxDepth {
		return nil, &Error{Kind: KindLua, Err: fmt.Errorf("fanout recursion exceeded cap of %d", MaxDepth)}
	}
	vis := u.visible()
	w, err := resolveTarget(vis, worker)
	if err != nil {
		return nil, err
	}
	if s := w.section(); len(s.Items) > 0 {
		return nil, luavm.Scriptf("section `%s` is a list section, not a worker template", s.Name)
	}
	if len(members) == 0 {
		return nil, luavm.Scriptf("fanout over an empty collection: no work is likely a bug")
	}
	v, err := u.vm.Var()
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, cancelledBy(ctx)
	}
	fc := &fanoutCall{
		caller:   u,
		worker:   w,
		vis:      armVisible(vis, w),
		members:  members,
		v:        v,
		incoming: u.incoming,
		token:    u.r.store.NewFanout(),
	}
	return fc.run(ctx)
}

// run runs the arms under a context derived from the caller's ctx, which
// the first failing arm cancels for its siblings.
func (fc *fanoutCall) run(ctx context.Context) ([]luavm.FanoutResult, error) {
	u := fc.caller
	r := u.r
	armsCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fr := frame{depth: u.frame.depth + 1, args: u.frame.args, inArm: true, parent: u.id}

	limit := r.cfg.Limits.FanoutConcurrency
	if limit <= 0 {
		limit = DefaultFanoutConcurrency
	}
	slots := make(chan struct{}, limit)
	results := make([]luavm.FanoutResult, len(fc.members))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	// The first failure wins; arms that fail after it (usually because
	// it cancelled them) are consequences, not causes.
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil && armsCtx.Err() == nil {
			first = err
			cancel(errSiblingFailed)
		}
	}
spawn:
	for i := range fc.members {
		select {
		case slots <- struct{}{}:
		case <-armsCtx.Done():
			break spawn
		}
		if armsCtx.Err() != nil {
			<-slots
			break
		}
		// Ids and var clones are taken here, in collection order, so
		// sys.id grows with sys.index and no arm reads the caller's var
		// concurrently with another.
		id := int(r.ids.Add(1))
		v := fc.v.Clone()
		wg.Go(func() {
			defer func() { <-slots }()
			res, err := fc.arm(armsCtx, fr, i, id, v)
			if err != nil {
				fail(err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()

	if ctx.Err() != nil {
		return nil, cancelledBy(ctx)
	}
	if first != nil {
		return nil, first
	}
	return results, nil
}

// arm runs member i. It reports Fanout arm started and then exactly one
// terminal observation, whatever happens, panics included.
func (fc *fanoutCall) arm(ctx context.Context, fr frame, i, id int, v *luavm.Var) (res luavm.FanoutResult, err error) {
	u := fc.caller.r.newUnit(fr, fc.worker, ViaFanout)
	u.visibleOverride = fc.vis
	u.incoming = fc.incoming
	u.item, u.hasItem = fc.members[i], true
	u.index = i + 1
	u.writer = store.Writer{Fanout: fc.token, Arm: i + 1}

	if u.r.tracing() {
		u.emit(FanoutArmStarted, "", "", &Info{Index: u.index, Of: len(fc.members)})
	} else {
		u.observe(FanoutArmStarted)
	}
	defer func() {
		if p := recover(); p != nil {
			err = &Error{Kind: KindInternal, Err: fmt.Errorf("fanout arm %d of section %q panicked: %v", u.index, u.name, p)}
		}
		var ex *loopExhaustedError
		switch {
		case err == nil:
			u.observe(FanoutArmSucceeded)
		case errors.As(err, &ex):
			// A tool loop that ran out is a soft result: the other arms'
			// work is still worth having.
			res, err = luavm.FanoutResult{Text: exhaustedText(u.item), Item: u.item, Exhausted: true}, nil
			u.observe(FanoutArmExhausted)
		case ctx.Err() != nil:
			u.observe(FanoutArmCancelled)
		case u.r.tracing():
			u.emit(FanoutArmFailed, "", "", errInfo(err))
		default:
			u.observe(FanoutArmFailed)
		}
	}()
	text, err := u.runArm(ctx, id, v)
	if err != nil {
		return luavm.FanoutResult{}, err
	}
	return luavm.FanoutResult{Text: text, OK: true, Item: u.item}, nil
}

// runArm is the arm's section lifecycle (prompt-language §2.2, §3.4) with the
// worker's blocks; a jump continues as a chain from the target, whose outcome
// is the arm's text.
func (u *unit) runArm(ctx context.Context, id int, v *luavm.Var) (string, error) {
	f, err := func() (flow, error) {
		u.vm = luavm.New(ctx, u.vmOptions(luavm.KindSection, id, u.r.now(), u.r.walkAt, u.incoming, v))
		defer u.teardown()
		return u.blocks(ctx, u.incoming)
	}()
	if err != nil {
		return "", err
	}
	end := walkEnd{returned: f.returned, value: f.value, reply: f.reply}
	if f.jump != nil {
		fr := u.frame
		fr.parent = u.id
		end, err = u.r.walk(ctx, fr, *f.jump, entry{reply: f.reply, v: v, addressed: true, via: ViaJump})
		if err != nil {
			return "", err
		}
	}
	return end.text(), nil
}

// exhaustedText is the text of an arm whose tool loop ran out
// (prompt-language §7).
func exhaustedText(item any) string {
	rendered, err := luavm.RenderData(item)
	if err != nil {
		rendered = "(unrenderable item)"
	}
	return "## " + rendered + "\n\nUNKNOWN\n\n(section incomplete: tool loop exhausted)"
}
