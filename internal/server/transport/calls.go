package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errSessionEnded is the cause a call's context carries when its session
// was closed under it.
var errSessionEnded = errors.New("the client ended its session before the reply")

// Calls tracks the tools/call handlers in flight. A shutdown waits on it
// for the calls to answer before closing sessions, and the HTTP transport
// ends the calls of a session the client DELETEs through it. The zero value
// is ready to use; a Calls must not be copied after first use.
//
// It exists because of two go-sdk v1.8.0 behaviours: the SDK offers no way
// to wait for the handlers of every session at once, and
// ServerSession.Close (mcp/server.go) waits for the handlers in flight
// (internal/jsonrpc2/conn.go, Connection.Close) instead of cancelling
// them.
type Calls struct {
	mu sync.Mutex
	n  int // handlers running, plus requests whose reply is not yet written
	// idle is closed when n drops to 0 and replaced when a call starts;
	// nil before the first call (Wait reads n first).
	idle chan struct{}
	// bySession holds the cancel func of every call in flight on an
	// addressable (HTTP) session, so ending the session can end its calls.
	bySession map[string]map[*context.CancelCauseFunc]struct{}
}

// Track wraps h so that each call counts as in flight while it runs and
// files its cancel func under its session, where CancelSession can reach
// it. Register every tool handler through it.
func (c *Calls) Track(h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sid := ""
		if req.Session != nil {
			sid = req.Session.ID()
		}
		if sid == "" {
			// No session to end (stdio's has no id): nothing can reach a
			// cancel func filed here, so the call needs no context of its
			// own. Its parent (the fast lane's call, or the SDK's request)
			// is cancelled once the call is answered, as this one's was.
			// A context per call (with its cancel func, and the children
			// map its parent grew for it) was several allocations of every
			// stdio tools/call (issue #12).
			c.enter()
			defer c.leave()
			return h(ctx, req)
		}
		ctx, cancel, own := callContext(ctx)
		if own {
			defer cancel(nil)
		}
		key := &cancel
		c.mu.Lock()
		c.enterLocked()
		if c.bySession == nil {
			c.bySession = map[string]map[*context.CancelCauseFunc]struct{}{}
		}
		if c.bySession[sid] == nil {
			c.bySession[sid] = map[*context.CancelCauseFunc]struct{}{}
		}
		c.bySession[sid][key] = struct{}{}
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.leaveLocked()
			delete(c.bySession[sid], key)
			if len(c.bySession[sid]) == 0 {
				delete(c.bySession, sid)
			}
			c.mu.Unlock()
		}()
		return h(ctx, req)
	}
}

// callContext is the context a tracked call of a session runs in and the
// func CancelSession cancels it with. A call the HTTP transport answers
// itself already runs in a context of its own that it cancels once the
// call returns (callStream.done and cancel): the handler runs in that
// one, so a waiting run holds one context for its call and not two (own
// is false: the caller must not cancel it). It is that context only when
// ctx is cancelled exactly when it is (ctx.Done() is its done: ctx is it
// or carries values over it, nothing that may end sooner or later) and
// the stream has a cancel func to file. Otherwise the handler gets a
// context of its own, cancelled when it returns (own). (A call without a
// session gets no context here at all: Track.)
func callContext(ctx context.Context) (_ context.Context, _ context.CancelCauseFunc, own bool) {
	if st, _ := ctx.Value(callStreamKey{}).(*callStream); st != nil && st.done != nil && ctx.Done() == st.done && st.cancel != nil {
		return ctx, st.cancel, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	return ctx, cancel, true
}

// enterLocked counts one more thing in flight; c.mu is held.
func (c *Calls) enterLocked() {
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
}

// leaveLocked counts one less; c.mu is held.
func (c *Calls) leaveLocked() {
	c.n--
	if c.n == 0 {
		close(c.idle)
	}
}

// holdReply counts an HTTP request that carries calls as in flight until
// the returned func is called, once its answer is written. The handler
// returning is not enough for a shutdown: go-sdk v1.8.0 writes the reply
// to the POST's stream after the handler returns, and closing the session
// in between ends the stream without it ("request terminated without
// response").
func (c *Calls) holdReply() (release func()) {
	c.enter()
	return c.leave
}

// enter counts one more thing in flight.
func (c *Calls) enter() {
	c.mu.Lock()
	c.enterLocked()
	c.mu.Unlock()
}

// leave counts one less.
func (c *Calls) leave() {
	c.mu.Lock()
	c.leaveLocked()
	c.mu.Unlock()
}

// CancelSession cancels every call in flight on the session id names, so
// the work behind them stops and the session can close without waiting
// for them. It reports how many it cancelled.
func (c *Calls) CancelSession(id string) int {
	if id == "" {
		return 0
	}
	c.mu.Lock()
	calls := c.bySession[id]
	delete(c.bySession, id)
	c.mu.Unlock()
	for cancel := range calls {
		(*cancel)(errSessionEnded)
	}
	return len(calls)
}

// Wait waits until no tracked call is running and every reply held by
// holdReply is written, or ctx ends.
func (c *Calls) Wait(ctx context.Context) error {
	for {
		c.mu.Lock()
		idle, n := c.idle, c.n
		c.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("wait for %d call(s) in flight: %w", n, context.Cause(ctx))
		}
	}
}
