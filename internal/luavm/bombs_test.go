package luavm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/memtest"
	"github.com/promptforge-go/promptforge/internal/store"
)

// The sandbox bombs of issue #11: each must end with its limit's error,
// and the heap must stay far below what the bomb grows to unbounded
// (gigabytes within the default time budget).

// tailCallLoop never returns: each call is a tail call, so the call stack
// stays one frame deep and only the frame's tail-call count grows.
const tailCallLoop = `local function f() return f() end return f()`

// A tail-call loop stopped by the time budget (or a cancel) used to build
// its error's traceback with one line per counted tail call: gigabytes and
// seconds after the budget fired. The traceback is now bounded, so the
// error comes back promptly and small.
func TestTailCallLoopEndsSmall(t *testing.T) {
	t.Run("time budget", func(t *testing.T) {
		e := newEnv(t, Options{Limits: Limits{LuaTime: 300 * time.Millisecond}})
		var err error
		grew := memtest.Peak(func() { _, err = e.run(t, tailCallLoop) })
		var qe *QuotaError
		if !errors.As(err, &qe) {
			t.Fatalf("want the time quota error, got %T %v", err, err)
		}
		assertBounded(t, grew, 32<<20)
		if n := len(err.Error()); n > 4096 {
			t.Fatalf("error is %d bytes long", n)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		vm := New(ctx, Options{Kind: KindSection, Host: &fakeHost{}, Store: store.New()})
		defer vm.Close()
		var err error
		grew := memtest.Peak(func() {
			// The run is cancelled from inside, after enough tail calls to
			// have built a big traceback before the fix.
			timer := time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("the caller cancelled the call")) })
			defer timer.Stop()
			_, err = vm.RunChunk(chunk(t, "section `Loop` prologue", 5, tailCallLoop))
		})
		var ce *CancelledError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "the caller cancelled the call") {
			t.Fatalf("want the cancellation, got %T %v", err, err)
		}
		assertBounded(t, grew, 32<<20)
	})
}

func assertBounded(t *testing.T, grew, bound uint64) {
	t.Helper()
	t.Logf("heap grew by at most %d MiB", grew>>20)
	if grew > bound {
		t.Fatalf("heap grew by %d MiB, over the %d MiB bound", grew>>20, bound>>20)
	}
}
