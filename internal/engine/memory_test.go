package engine

import (
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/memtest"
)

// A prose block rendering 1 MiB of args 200 times used to build a 200 MB
// model turn (issue #11). It is refused at the placeholder that crosses
// the string limit, before anything is sent, without building the block.
func TestMemory_TemplateBombIsRefused(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("never asked"))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+strings.Repeat("{{ args }}\n", 200))
	args := strings.Repeat("a", 1<<20)
	var r result
	grew := memtest.Peak(func() { r = runP(t, p, args, g.cfg()) })
	r.fails(t, KindSubstitution, "the rendered block would exceed the 16777216-byte string limit at {{ args }}")
	if n := len(g.Requests()); n != 0 {
		t.Fatalf("%d requests reached the gateway", n)
	}
	t.Logf("heap grew by at most %d MiB", grew>>20)
	if grew > 128<<20 {
		t.Fatalf("heap grew by %d MiB rendering a refused block", grew>>20)
	}
}

// The memory ceiling is the run's: what an earlier section left in the
// store counts against what a later section's Lua keeps.
func TestMemory_CeilingSpansSectionsAndStore(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`local s = string.rep("x", 1e6) for i = 1, 40 do store.write("f" .. i .. ".txt", s) end`)+
		"\n## B\n\n"+lua(`local t = {} for i = 1, 40 do t[i] = string.rep("y", 1e6) .. i end return "kept"`))
	runP(t, p, "", Options{}).fails(t, KindQuota, "lua memory limit exceeded")
	small := parse(t, "# T\n\n## A\n\n"+lua(`local s = string.rep("x", 1e6) for i = 1, 10 do store.write("f" .. i .. ".txt", s) end`)+
		"\n## B\n\n"+lua(`local t = {} for i = 1, 10 do t[i] = string.rep("y", 1e6) .. i end return "kept"`))
	runP(t, small, "", Options{}).ok(t, "kept")
}
