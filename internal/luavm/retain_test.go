package luavm

import (
	"context"
	"runtime"
	"testing"
	"time"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

// A closed VM must not stay reachable through a table it made. The engine
// closes the H1's VM before the sections run, yet a table of it outlived
// it and, through the meter every table points at, kept the whole H1
// state in memory through each run's model turns (about 17 KB per run in
// flight, docs/benchmarks.md, "Prose runs at scale").
func TestClosedVMIsNotKeptByItsTables(t *testing.T) {
	vm := New(context.Background(), Options{Kind: KindH1, Host: &fakeHost{}})
	kept, ok := vm.L.G.Global.RawGetString("string").(*lua.LTable)
	if !ok {
		t.Fatal("no string table in the H1's globals")
	}
	if _, _, _, metered := kept.TableFields(); !metered {
		t.Fatal("the VM's string table is not metered: the test holds the wrong table")
	}
	collected := make(chan struct{})
	runtime.AddCleanup(vm.L, func(c chan struct{}) { close(c) }, collected)
	vm.Close()
	runtime.GC()
	runtime.GC()
	// The runtime runs cleanups on its own goroutine after the collection;
	// the wait bounds a failure, it times nothing.
	select {
	case <-collected:
	case <-time.After(10 * time.Second):
		t.Fatal("the closed VM's state is still reachable through a table it made")
	}
	runtime.KeepAlive(kept)
}

// Nor through the call-frame segment or value stack its state gives back:
// the next state takes the segment from the pool (or the whole state, when
// the VM's Lua ended cleanly, pool.go), and their stale frames and slots
// kept the closed VM's values reachable for as long as the next VM lived
// (the H1's through each section's model turn). The table the first chunk
// makes is a local and a global it added; a reused state must have
// forgotten both.
func TestClosedVMIsNotKeptByItsCallFrames(t *testing.T) {
	for _, tc := range []struct{ name, last string }{
		{"reused state", "local z = 1"},
		{"state not reused", "error('fails')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			a := New(ctx, Options{Kind: KindSection, Host: &fakeHost{}})
			if _, err := a.RunChunk(chunk(t, "a", 1, "local a, b, c, l = 1, 2, 3, {} keep = l")); err != nil {
				t.Fatal(err)
			}
			kept, ok := a.L.G.Global.RawGetString("keep").(*lua.LTable)
			if !ok {
				t.Fatal("the chunk left no table in keep")
			}
			collected := make(chan struct{})
			runtime.AddCleanup(kept, func(c chan struct{}) { close(c) }, collected)
			kept = nil
			a.RunChunk(chunk(t, "b", 1, tc.last))
			a.Close()
			b := New(ctx, Options{Kind: KindSection, Host: &fakeHost{}})
			defer b.Close()
			runtime.GC()
			runtime.GC()
			select {
			case <-collected:
			case <-time.After(10 * time.Second):
				t.Fatal("the closed VM's table is still reachable through a call frame or register another state reused")
			}
		})
	}
}
