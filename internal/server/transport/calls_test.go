package transport

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call counts as in flight while its handler runs: Wait gives up with a
// count while it does, and returns once it has answered. A call without an
// addressable session is never filed under one.
func TestCallsWaitForTheHandlersInFlight(t *testing.T) {
	var calls Calls
	if err := calls.Wait(context.Background()); err != nil {
		t.Fatalf("the zero Calls: %v", err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	h := calls.Track(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(entered)
		<-release
		return &mcp.CallToolResult{}, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := h(context.Background(), &mcp.CallToolRequest{})
		done <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := calls.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "wait for 1 call(s) in flight") {
		t.Fatalf("Wait with a call in flight: %v", err)
	}
	if n := calls.CancelSession(""); n != 0 {
		t.Fatalf("CancelSession(\"\") cancelled %d", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := calls.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after the call answered: %v", err)
	}
}

// A reply held by holdReply keeps Wait waiting after the handler has
// returned, until the reply is written.
func TestCallsWaitForHeldReplies(t *testing.T) {
	var calls Calls
	release := calls.holdReply()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := calls.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a reply held: %v", err)
	}
	release()
	if err := calls.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after the reply was written: %v", err)
	}
}

// A call without an addressable session (stdio's) gets its caller's
// context as it is: nothing could cancel a context of its own, so Track
// makes none, and with another call in flight (so that the idle channel
// is not remade) tracking it allocates nothing (issue #12).
func TestTrackMakesNoContextForASessionlessCall(t *testing.T) {
	var calls Calls
	release := calls.holdReply()
	defer release()
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got context.Context
	h := calls.Track(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got = ctx
		return nil, nil
	})
	req := &mcp.CallToolRequest{}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = h(parent, req) }); allocs != 0 {
		t.Errorf("tracking a sessionless call allocated %v times; want 0", allocs)
	}
	if got != parent {
		t.Errorf("the handler got a context of Track's own; want its caller's")
	}
}

// callContext runs a call of a session in its stream's context only when
// that context ends exactly when the stream's does: with a deadline of its
// own (a context that may end sooner) the call gets a context of its own,
// whose cancel ends the call and not the stream.
func TestCallContextTakesTheStreamsOnlyWhenItEndsWithIt(t *testing.T) {
	streamCtx, cancelStream := context.WithCancelCause(context.Background())
	defer cancelStream(nil)
	st := &callStream{done: streamCtx.Done(), cancel: cancelStream}
	ctx := context.WithValue(streamCtx, callStreamKey{}, st)
	if got, _, own := callContext(ctx); own || got != ctx {
		t.Fatalf("the stream's own context: own %v, same %v; want the stream's, not owned", own, got == ctx)
	}
	sooner, stop := context.WithTimeout(ctx, time.Hour)
	defer stop()
	got, cancel, own := callContext(sooner)
	if !own {
		t.Fatal("a context with a deadline of its own was taken for the stream's; want one of the call's own")
	}
	cancel(nil)
	if got.Err() == nil || streamCtx.Err() != nil {
		t.Errorf("cancelling the call's context: call %v, stream %v; want the call's ended, the stream's not", got.Err(), streamCtx.Err())
	}
}
