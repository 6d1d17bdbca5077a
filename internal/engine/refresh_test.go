package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/modelset"
)

// liveSet is a model set over g's real /models, with no wait between
// fetches: every binding miss may fetch again.
func liveSet(t *testing.T, g *gw) *modelset.Set {
	t.Helper()
	set, err := modelset.New(modelset.Options{
		Fetch:    func(ctx context.Context) (gateway.Catalog, error) { return g.client.Models(ctx, nil) },
		URL:      g.URL(),
		Interval: time.Nanosecond, Backoff: time.Nanosecond, MaxBackoff: time.Nanosecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestABindingMissFetchesTheModelListOnceAndBindsANewModel(t *testing.T) {
	g := newGW(t)
	g.SetModelsReply(gatewaytest.JSON(map[string]any{"object": "list", "data": []any{}}))
	set := liveSet(t, g)
	if _, err := set.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The model is pulled after the list was fetched.
	g.SetModels(map[string]any{"id": "test-model", "description": "A general assistant model for tests", "context": 32768, "thinking": "never"})
	g.Enqueue(gatewaytest.Text("bound late"))
	runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\nHi.\n"), "", Options{Client: g.client, ModelSet: set}).ok(t, "bound late")
	if n := g.ModelsCalls(); n != 2 {
		t.Fatalf("%d model-list fetches, want 2 (the first and one after the miss)", n)
	}
	// A need nothing serves refreshes once, not once per need.
	p := parse(t, "# T\n\n```lua\npcall(models.need, \"a\", \"A long-context model\", {context = 1000000})\npcall(models.need, \"b\", \"A longer-context model\", {context = 2000000})\n```\n")
	runP(t, p, "", Options{Client: g.client, ModelSet: set}).fails(t, KindBinding, `no model matches capability "A long-context model"`)
	if n := g.ModelsCalls(); n != 3 {
		t.Fatalf("%d model-list fetches after a run with two misses, want 3", n)
	}
}

func TestABindingWhileTheModelServerIsDownSaysSo(t *testing.T) {
	g := newGW(t)
	set := liveSet(t, g)
	g.Close()
	_, _ = set.Refresh(t.Context())
	e := runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\nHi.\n"), "", Options{Client: g.client, ModelSet: set}).
		fails(t, KindBinding, "the model server at "+g.URL()+" is not reachable: ")
	if msg := e.Error(); strings.Contains(msg, "no model matches") || !strings.Contains(msg, "; start it, or check [gateway].url") {
		t.Fatalf("message %q", msg)
	}
}
