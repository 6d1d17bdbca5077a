package engine

import (
	"sync"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/luavm"
)

// ModelPicks remembers which model of a model list each models.need (or
// models.default) description bound, so that runs of the same prompts
// against the same list do not rank the list again: with the lexical
// ranker, building its index of the list was most of a one-turn run's
// binding, about 30 allocations and 4 % of the server's CPU at scale
// (docs/benchmarks.md, "Prose runs at scale"). A host shares one between
// the runs it starts with the same [Ranking] (through [Options]); it is
// safe for concurrent use.
//
// Only what the lexical ranker decided is kept: it reads nothing but the
// list, the description and the policy, so the same question gets the
// same answer. An embedding ranker's answer can change while the list
// does not (it falls back to the lexical one while the embedder is down),
// so runs ranked by one pick afresh. Only a model that bound is kept: a
// miss, an ambiguous or duplicate match, or a failure is decided again,
// with its wording, by the run that meets it. The picks are of one list:
// a run with another (a newer snapshot) starts them afresh, and at most
// maxModelPicks descriptions are kept for it.
type ModelPicks struct {
	mu    sync.Mutex
	of    *gateway.Model // the list the picks index: its first model
	n     int            // and its length
	picks map[pickKey]int
}

// maxModelPicks bounds what one list's picks hold: a catalog's distinct
// model descriptions are far fewer, so past it the picks start over.
const maxModelPicks = 1024

// pickKey is one binding question: the description and the options that
// narrow the candidates (temperature and max_tokens do not).
type pickKey struct {
	description           string
	context               uint32
	hasContext            bool
	thinking, hasThinking bool
}

// NewModelPicks returns empty picks.
func NewModelPicks() *ModelPicks { return &ModelPicks{} }

func keyOf(description string, o luavm.ModelOpts) pickKey {
	k := pickKey{description: description}
	if o.Context != nil {
		k.context, k.hasContext = *o.Context, true
	}
	if o.Thinking != nil {
		k.thinking, k.hasThinking = *o.Thinking, true
	}
	return k
}

// admits reports whether m is a candidate under k's options. The filter
// reads only the key, so an option that narrows the candidates is in the
// key, and remembered picks can never be of a different candidate set.
func (k pickKey) admits(m gateway.Model) bool {
	if k.hasContext && m.Context < k.context {
		return false
	}
	if !k.hasThinking {
		return true
	}
	switch m.Thinking {
	case gateway.ThinkingSwitchable:
		return true
	case gateway.ThinkingAlways:
		return k.thinking
	case gateway.ThinkingNever:
		return !k.thinking
	default:
		return false
	}
}

// lookup returns the index in models of the model k bound, if remembered.
func (p *ModelPicks) lookup(models []gateway.Model, k pickKey) (int, bool) {
	if p == nil || len(models) == 0 {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ofLocked(models) {
		return 0, false
	}
	i, ok := p.picks[k]
	return i, ok
}

// remember records that k bound models[i].
func (p *ModelPicks) remember(models []gateway.Model, k pickKey, i int) {
	if p == nil || len(models) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ofLocked(models) || len(p.picks) >= maxModelPicks {
		p.of, p.n, p.picks = &models[0], len(models), make(map[pickKey]int)
	}
	p.picks[k] = i
}

// ofLocked reports whether the picks are of models (non-empty): the same
// backing array and length.
func (p *ModelPicks) ofLocked(models []gateway.Model) bool {
	return p.of == &models[0] && p.n == len(models)
}
