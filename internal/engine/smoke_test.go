package engine

import (
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

func TestSmoke(t *testing.T) {
	p := parse(t, "# Title\n\n## Run\n\n```lua\nreturn args .. '!'\n```\n")
	runP(t, p, "hi", Options{}).ok(t, "hi!")
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("spoken"))
	p2 := parse(t, "# Title\n\n"+defaultModel+"\n## Run\n\nSay something about {{ args }}.\n")
	r := runP(t, p2, "x", g.cfg())
	r.ok(t, "spoken")
	if r.Turns != 1 {
		t.Fatalf("turns %d", r.Turns)
	}
}
