package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/luavm"

	"github.com/promptforge-go/promptforge/internal/match"
)

// Runs sharing ModelPicks rank a model list once: later runs of the same
// need bind the same model without building the lexical index again (many
// fewer allocations), and a run with another list ranks that one.
func TestModelPicksRankAListOnce(t *testing.T) {
	g := newGW(t)
	p := parse(t, header+"# T\n\n"+defaultModel+"\n## Run\n\n"+lua(`return writer.model_id`))
	other := gateway.Model{ID: "other-model", Description: "An image generator for pictures", Dialect: gateway.DialectOpenAI}
	run := func(cfg Options, want string) {
		t.Helper()
		res, err := Run(context.Background(), p, "", nil, cfg)
		result{Result: res, err: err}.ok(t, want)
	}
	cfg := g.cfg()
	cfg.Models = []gateway.Model{other, testModel}
	fresh := testing.AllocsPerRun(20, func() { run(cfg, "test-model") })
	cfg.ModelPicks = NewModelPicks()
	picked := testing.AllocsPerRun(20, func() { run(cfg, "test-model") })
	if picked+15 > fresh {
		t.Errorf("a run binding through remembered picks makes %.0f allocations, one ranking afresh %.0f: the picks were not used", picked, fresh)
	}
	// Another list (a newer snapshot), where the same description binds
	// another model: ranked, not read from the first list's picks.
	writer := gateway.Model{ID: "writer-model", Description: "A general assistant model", Dialect: gateway.DialectOpenAI}
	cfg.Models = []gateway.Model{writer}
	run(cfg, "writer-model")
}

// A run ranked by another ranker than the lexical one (embeddings, which
// can fall back while the embedder is down) ranks its list every time.
func TestModelPicksOnlyKeepLexicalRanks(t *testing.T) {
	g := newGW(t)
	p := parse(t, header+"# T\n\n"+defaultModel+"\n## Run\n\n"+lua(`return writer.model_id`))
	var indexed atomic.Int32
	cfg := g.cfg()
	cfg.Ranker = countingRanker{match.NewLexical(), &indexed}
	cfg.ModelPicks = NewModelPicks()
	for range 3 {
		res, err := Run(context.Background(), p, "", nil, cfg)
		result{Result: res, err: err}.ok(t, "test-model")
	}
	if n := indexed.Load(); n != 3 {
		t.Fatalf("the ranker indexed the model list %d times for 3 runs, want 3", n)
	}
}

// countingRanker is a real ranker that counts the indexes it builds.
type countingRanker struct {
	match.Ranker
	n *atomic.Int32
}

func (c countingRanker) Index(ctx context.Context, docs []match.Doc) (match.Index, error) {
	c.n.Add(1)
	return c.Ranker.Index(ctx, docs)
}

// Runs sharing ModelPicks at once, against two lists that bind the same
// description to different models (a snapshot and its successor, runs of
// both in flight), each bind their own list's model (the race detector
// sees the picks written outside their lock).
func TestModelPicksConcurrentLists(t *testing.T) {
	g := newGW(t)
	p := parse(t, header+"# T\n\n"+defaultModel+"\n## Run\n\n"+lua(`return writer.model_id`))
	other := gateway.Model{ID: "other-model", Description: "An image generator for pictures", Dialect: gateway.DialectOpenAI}
	writer := gateway.Model{ID: "writer-model", Description: "A general assistant model", Dialect: gateway.DialectOpenAI}
	lists := [][]gateway.Model{{other, testModel}, {writer}}
	want := []string{"test-model", "writer-model"}
	picks := NewModelPicks()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			cfg := g.cfg()
			cfg.Models, cfg.ModelPicks = lists[i%2], picks
			for range 5 {
				res, err := Run(context.Background(), p, "", nil, cfg)
				if err != nil || res.Value != want[i%2] {
					t.Errorf("run %d: %q %v, want %q", i, res.Value, err, want[i%2])
					return
				}
			}
		})
	}
	wg.Wait()
}

// The picks are of one list: another list (or the same one grown) finds
// nothing, remembering for it starts them over, and one list's picks
// start over past maxModelPicks descriptions.
func TestModelPicksAreOfOneListAndBounded(t *testing.T) {
	a := []gateway.Model{testModel, testModel}
	b := []gateway.Model{testModel}
	p := NewModelPicks()
	k := keyOf("a writer", luavm.ModelOpts{})
	p.remember(a, k, 1)
	if i, ok := p.lookup(a, k); !ok || i != 1 {
		t.Fatalf("lookup after remember: %d %v, want 1 true", i, ok)
	}
	if _, ok := p.lookup(b, k); ok {
		t.Fatal("another list found the first list's pick")
	}
	if _, ok := p.lookup(a[:1], k); ok {
		t.Fatal("a shorter view of the list found its pick")
	}
	p.remember(b, k, 0)
	if _, ok := p.lookup(a, k); ok {
		t.Fatal("the first list's picks survived picks for another")
	}
	for i := range maxModelPicks - 1 {
		p.remember(b, keyOf(fmt.Sprint("description ", i), luavm.ModelOpts{}), 0)
	}
	if _, ok := p.lookup(b, k); !ok {
		t.Fatalf("the first pick was dropped before %d were kept", maxModelPicks)
	}
	p.remember(b, keyOf("one more", luavm.ModelOpts{}), 0)
	if _, ok := p.lookup(b, k); ok {
		t.Fatalf("picks past %d were not started over", maxModelPicks)
	}
	if len(p.picks) != 1 {
		t.Fatalf("%d picks after starting over, want 1", len(p.picks))
	}
}
