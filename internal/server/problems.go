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

	mu    sync.Mutex
	in    listingInputs
	found map[string]string // prompt name → problem ("" for none)
}

// problem is e's binding problem ("" when it has none, or when the probe
// could not tell) under gen and models, probing it on first use.
func (b *bindingProblems) problem(ctx context.Context, gen *catalog.Generation, models []gateway.Model, ts []tools.Tool, e catalog.Entry) string {
	p := e.Prompt()
	if p == nil {
		return ""
	}
	in := listingInputs{gen, models, ts}
	b.mu.Lock()
	if !b.in.is(in) || b.found == nil {
		b.in, b.found = in, map[string]string{}
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
	if b.in.is(in) {
		b.found[e.Name()] = problem
	}
	b.mu.Unlock()
	return problem
}

// listingInputs are what list_prompts' pages and their binding problems
// are made of, besides the offset: the catalog generation, the model list
// and the tool set. The listing's caches (pageCache, bindingProblems) each
// hold the entries of one and empty themselves for any other.
type listingInputs struct {
	gen    *catalog.Generation
	models []gateway.Model
	tools  []tools.Tool
}

// is reports whether in and o are the same inputs: the same generation,
// model list and tool set.
func (in listingInputs) is(o listingInputs) bool {
	return in.gen == o.gen && sameSlice(in.models, o.models) && sameSlice(in.tools, o.tools)
}

// sameSlice reports whether a and b are the same list: the same backing
// array and length (a new model list or tool set is a new slice).
func sameSlice[T any](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}
