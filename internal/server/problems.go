package server

import (
	"context"
	"sync"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// bindingProblems caches, per catalog generation, model list and tool
// set, the binding problem engine.Probe finds in each healthy prompt
// list_prompts has shown: a prompt whose model need binds to nothing is
// listed with that problem before a caller runs it. Only the prompts of
// the pages actually listed are probed, once each; a new generation, model
// list or tool set starts an empty cache.
type bindingProblems struct {
	// ranking is the server's, so a problem is judged as runs bind.
	ranking engine.Ranking

	mu     sync.Mutex
	gen    *catalog.Generation
	models []gateway.Model
	tools  []tools.Tool
	found  map[string]string // prompt name → problem ("" for none)
}

// problem is e's binding problem ("" when it has none, or when the probe
// could not tell) under gen and models, probing it on first use.
func (b *bindingProblems) problem(ctx context.Context, gen *catalog.Generation, models []gateway.Model, ts []tools.Tool, e catalog.Entry) string {
	p := e.Prompt()
	if p == nil {
		return ""
	}
	b.mu.Lock()
	if b.gen != gen || !sameList(b.models, models) || !sameTools(b.tools, ts) || b.found == nil {
		b.gen, b.models, b.tools, b.found = gen, models, ts, map[string]string{}
	}
	if problem, ok := b.found[e.Name()]; ok {
		b.mu.Unlock()
		return problem
	}
	b.mu.Unlock()
	// The probe runs Lua (bounded by its time budget), so it runs outside
	// the lock: one slow H1 must not hold every other listing. Two
	// listings may probe the same prompt at once; both get the same answer.
	// An H1 the probe cannot run to the end (it calls a model) has no
	// problem to show: the run will say what it meets.
	problem := engine.Probe(ctx, p, engine.Options{Models: models, Tools: ts, Ranking: b.ranking}).Problem()
	if ctx.Err() != nil {
		// A listing cancelled mid-probe leaves nothing to trust.
		return problem
	}
	b.mu.Lock()
	if b.gen == gen && sameList(b.models, models) && sameTools(b.tools, ts) {
		b.found[e.Name()] = problem
	}
	b.mu.Unlock()
	return problem
}

// sameList reports whether a and b are the same model list (the same
// backing array and length): a refreshed list is a new slice.
func sameList(a, b []gateway.Model) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}
