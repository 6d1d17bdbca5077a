package luavm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/store"
)

// sleepHost's list_from_section is a host call that does not pause the
// budget and takes long (a stand-in for a library call that polls
// nothing), and records whether the VM's Lua context was cancelled while
// it ran.
type sleepHost struct {
	*fakeHost
	vm                   *VM
	cancelledDuringSleep bool
}

func (h *sleepHost) ListFromSection(target string) ([]string, error) {
	time.Sleep(2 * time.Second)
	// luaCtx itself, not the state's context: its Err reads the clock.
	h.cancelledDuringSleep = h.vm.luaCtx.Err() != nil
	return h.fakeHost.ListFromSection(target)
}

// The time budget arms no timer (issue #12: arming one per VM run woke the
// netpoller thread): nothing cancels the VM behind its back, even when
// the budget runs out in the middle of a call. In a synctest bubble the
// sleep below advances the fake clock past the budget at once, and a
// timer armed with the budget would fire during it. The budget still
// counts that time: the chunk ends with the time quota error.
func TestBudgetArmsNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &sleepHost{fakeHost: &fakeHost{}}
		vm := New(t.Context(), Options{Kind: KindSection, Host: h, Store: store.New(), Limits: Limits{LuaTime: time.Second}})
		defer vm.Close()
		h.vm = vm
		_, err := vm.RunChunk(chunk(t, "section `Run` prologue", 10, `list_from_section("## L") return "finished"`))
		if h.cancelledDuringSleep {
			t.Fatal("the VM's context was cancelled while Lua was in a call: a timer fired")
		}
		var qe *QuotaError
		if !errors.As(err, &qe) || !strings.Contains(qe.Msg, "lua time quota exceeded") {
			t.Fatalf("want the time quota error once the call returns, got %T %v", err, err)
		}
	})
}

// A budget spent by the time Lua calls the host ends the Lua there: the
// host is not called (the timer, had it fired, would have ended it before).
func TestSpentBudgetCallsNoHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &sleepHost{fakeHost: &fakeHost{}}
		vm := New(t.Context(), Options{Kind: KindSection, Host: h, Store: store.New(), Limits: Limits{LuaTime: time.Second}})
		defer vm.Close()
		h.vm = vm
		_, err := vm.RunChunk(chunk(t, "section `Run` prologue", 10, `list_from_section("## L") pcall(models.infer, "hi") return "finished"`))
		var qe *QuotaError
		if !errors.As(err, &qe) || !strings.Contains(qe.Msg, "lua time quota exceeded") {
			t.Fatalf("want the time quota error, got %T %v", err, err)
		}
		if len(h.inferred) != 0 {
			t.Fatalf("the host was called with the budget spent: %q", h.inferred)
		}
	})
}

// slowHost's model calls and execute take 2 s: waits, which the budget
// does not count.
type slowHost struct{ *fakeHost }

func (h *slowHost) Infer(ctx context.Context, model *ModelHandle, p string) (string, error) {
	time.Sleep(2 * time.Second)
	return h.fakeHost.Infer(ctx, model, p)
}

func (h *slowHost) Execute(ctx context.Context, target string, input *string) (string, error) {
	time.Sleep(2 * time.Second)
	return h.fakeHost.Execute(ctx, target, input)
}

// The budget is paused while the VM waits on the host: waits that add up
// to far more than the 1 s budget end with the chunk's own result. (No
// test saw a wait counted, with the clock-read budget of issue #12.) The
// synctest bubble's clock advances by the sleeps alone.
func TestBudgetPausedDuringWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vm := New(t.Context(), Options{Kind: KindSection, Host: &slowHost{&fakeHost{}}, Store: store.New(), Limits: Limits{LuaTime: time.Second}})
		defer vm.Close()
		out, err := vm.RunChunk(chunk(t, "section `Run` prologue", 10,
			`local a = models.infer("hi") local b = execute("## Sub") local c = pcall(models.infer, "again") return a .. "|" .. b`))
		if err != nil || out.Value != "inferred:hi|executed ## Sub" {
			t.Fatalf("a chunk whose waits outlast the budget = %+v, %v", out, err)
		}
	})
}
