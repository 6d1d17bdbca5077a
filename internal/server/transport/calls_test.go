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
