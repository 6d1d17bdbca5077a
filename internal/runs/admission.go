package runs

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// RefusedError is the answer when no run slot came free within the admission
// timeout. Wait is the configured timeout, which the server renders in its
// own words; the caller may retry.
type RefusedError struct {
	Wait time.Duration
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("every run slot stayed busy for %s; retry the call in a moment", e.Wait)
}

// Slot is one of the MaxConcurrentRuns run slots. Hand it to Launch, which
// keeps it until the run ends; Release it yourself only if you decide not to
// launch.
type Slot struct {
	pool     *slotPool
	released atomic.Bool
}

// Release returns the slot. It is idempotent, so a deferred Release next to a
// Launch that already returned the slot is harmless.
func (s *Slot) Release() {
	if s.released.CompareAndSwap(false, true) {
		s.pool.release()
	}
}

// slotPool is a FIFO-fair counting semaphore. Waiters are queued channels
// rather than goroutines, and the invariant "waiters queued implies no free
// slot" holds under mu: release hands a slot straight to the head waiter.
type slotPool struct {
	mu      sync.Mutex
	free    int
	waiters list.List // of *slotWaiter
	closed  bool
}

type slotWaiter struct {
	ready   chan struct{} // closed when granted or when the pool closes
	granted bool          // guarded by slotPool.mu
	elem    *list.Element // its place in the queue while queued
}

var errPoolClosed = errors.New("the run registry is closed")

func newSlotPool(n int) *slotPool {
	return &slotPool{free: n}
}

// acquire waits up to timeout, or until ctx ends, for a slot. It reports
// errTimedOut when the timeout passed, errPoolClosed when the pool closed,
// and ctx's cause when ctx ended first.
func (p *slotPool) acquire(ctx context.Context, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errPoolClosed
	}
	if p.free > 0 && p.waiters.Len() == 0 {
		p.free--
		p.mu.Unlock()
		return nil
	}
	if timeout <= 0 {
		p.mu.Unlock()
		return errTimedOut
	}
	w := &slotWaiter{ready: make(chan struct{})}
	w.elem = p.waiters.PushBack(w)
	p.mu.Unlock()
	beforeWait(ctx)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-w.ready:
		return p.endWait(w, nil)
	case <-timer.C:
		return p.endWait(w, errTimedOut)
	case <-ctx.Done():
		return p.endWait(w, context.Cause(ctx))
	}
}

// endWait settles a queued waiter once its wait is over, for whatever
// reason. The grant and the give-up can cross: a slot may be handed over in
// the instant the waiter stops waiting, so the decision is taken under mu.
func (p *slotPool) endWait(w *slotWaiter, giveUp error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case w.granted && (giveUp == nil || giveUp == errTimedOut):
		// Granted at the instant the wait ran out: the slot is here, so
		// taking it beats refusing a caller who would have been admitted.
		return nil
	case w.granted:
		// The caller is gone; pass the slot on rather than losing it.
		p.releaseLocked()
		return giveUp
	case p.closed:
		return errPoolClosed
	default:
		p.waiters.Remove(w.elem)
		return giveUp
	}
}

var errTimedOut = errors.New("no run slot came free in time")

func (p *slotPool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked()
}

func (p *slotPool) releaseLocked() {
	if front := p.waiters.Front(); front != nil {
		w := p.waiters.Remove(front).(*slotWaiter)
		w.granted = true
		close(w.ready)
		return
	}
	p.free++
}

// close wakes every waiter with errPoolClosed and refuses later acquires.
// Slots already held keep working and are returned as usual.
func (p *slotPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for e := p.waiters.Front(); e != nil; e = p.waiters.Front() {
		close(p.waiters.Remove(e).(*slotWaiter).ready)
	}
}

// state reports free slots and queued waiters, for Stats and tests.
func (p *slotPool) state() (free, waiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.free, p.waiters.Len()
}

// beforeWaitKey is the context key of WithBeforeWait's function.
type beforeWaitKey struct{}

// WithBeforeWait returns ctx carrying f, which the registry calls on the
// caller's goroutine before it waits for anything on a call under ctx: a
// run slot ([Registry.Admit], when none is free) or a run
// ([Registry.Settle], unless an inline attempt ended it). The stdio
// transport hands the reading of stdin on from it (transport.DirectCall's
// Wait): it keeps reading on the calling goroutine only while the call
// cannot wait. f may be called more than once.
func WithBeforeWait(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, beforeWaitKey{}, f)
}

// beforeWait calls the function ctx carries from WithBeforeWait, if any.
func beforeWait(ctx context.Context) {
	if f, ok := ctx.Value(beforeWaitKey{}).(func()); ok && f != nil {
		f()
	}
}
