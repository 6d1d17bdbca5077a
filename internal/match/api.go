package match

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
)

// Doc is one candidate to rank: a tool, a model or a prompt.
type Doc struct {
	// Group is the provider (a tool's server). Only members of the
	// leader's group can be Duplicate twins; models each get a group of
	// their own, so models are never Duplicate.
	Group       string
	Name        string
	Description string
	Params      []string // parameter names (tools only)
}

// Outcome is the kind of a Decision.
type Outcome uint8

const (
	Absent Outcome = iota + 1
	Bind
	Ambiguous
	Duplicate
)

func (o Outcome) String() string {
	switch o {
	case Absent:
		return "absent"
	case Bind:
		return "bind"
	case Ambiguous:
		return "ambiguous"
	case Duplicate:
		return "duplicate"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Decision is the answer to one need. Members index the docs passed in,
// best first: one for Bind, two or more for Ambiguous and Duplicate, none
// for Absent. Scores are parallel to Members.
type Decision struct {
	Outcome Outcome
	Members []int
	Scores  []float64
}

// Ranker scores needs against a fixed set of docs. Implementations: the
// lexical ranker (the default) and Embedding, for an Embedder such as the
// gateway client's embeddings call.
type Ranker interface {
	// Index prepares docs for ranking.
	Index(ctx context.Context, docs []Doc) (Index, error)
}

// Index is a ranked corpus. Scores are similarities, symmetric for
// DocSimilarity: in [0,1] for the lexical ranker, in [-1,1] (cosine) for
// embeddings, where a negative score means "unrelated" and never clears a
// floor of 0.
type Index interface {
	// Score returns one similarity per doc, in catalog order.
	Score(ctx context.Context, need string) ([]float64, error)
	// DocSimilarity compares two indexed docs without scoring a need.
	DocSimilarity(i, j int) float64
	// Doc returns the i-th indexed doc (Resolve reads its Group for the
	// twin rule; callers map Decision members back to tools or models).
	Doc(i int) Doc
	Len() int
}

// Policy holds the decision thresholds (see the package doc for how they
// were calibrated for each ranker).
type Policy struct {
	SimilarityFloor    float64
	Margin             float64
	DuplicateThreshold float64
	SoloFloor          float64
	TopK               int
	// Lexical, when set, is the policy for a need an index scored with
	// the lexical ranker although this policy is for embeddings: a
	// [Fallback] index whose embedder is down. Nil keeps this policy.
	Lexical *Policy
}

// Validate reports the first threshold outside its range, naming the
// field as it is spelled in configuration.
func (p Policy) Validate() error {
	for _, f := range [...]struct {
		name string
		v    float64
	}{
		{"similarity_floor", p.SimilarityFloor},
		{"margin", p.Margin},
		{"duplicate_threshold", p.DuplicateThreshold},
		{"solo_floor", p.SoloFloor},
	} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return fmt.Errorf("match policy: %s must be a finite number between 0 and 1, got %v", f.name, f.v)
		}
	}
	if p.TopK < 1 {
		return fmt.Errorf("match policy: top_k must be at least 1, got %d", p.TopK)
	}
	if p.Lexical != nil {
		if p.Lexical.Lexical != nil {
			return fmt.Errorf("match policy: a lexical fallback policy cannot have a fallback of its own")
		}
		if err := p.Lexical.Validate(); err != nil {
			return fmt.Errorf("lexical fallback: %w", err)
		}
	}
	return nil
}

// Resolve decides which doc, if any, satisfies need.
//
// The window is the max(TopK, 2) best docs. Then, in order: an empty
// window is Absent; a leader below the floor binds only as a lone
// candidate (leader ≥ SoloFloor, runner-up below it) and is otherwise
// Absent; same-group twins of the leader (doc-to-doc similarity ≥
// DuplicateThreshold, whatever their need score) make it Duplicate; the
// leader plus the consecutive runners-up at or above the floor and within
// Margin of it make it Ambiguous when there are two or more; else Bind.
// Every threshold comparison is inclusive. "Nothing matches" is a
// Decision, never an error: errors mean the need could not be scored.
func Resolve(ctx context.Context, idx Index, p Policy, need string) (Decision, error) {
	if err := p.Validate(); err != nil {
		return Decision{}, err
	}
	r, idx, p, err := rank(ctx, idx, p, need, func(p Policy) int { return max(p.TopK, 2) })
	if err != nil {
		return Decision{}, err
	}
	if len(r.window) == 0 {
		return Decision{Outcome: Absent}, nil
	}
	lead := r.window[0]
	if !r.atLeast(lead, p.SimilarityFloor) {
		if r.solo(p.SoloFloor) {
			return r.decision(Bind, []int{lead}), nil
		}
		return Decision{Outcome: Absent}, nil
	}
	twins, leadGroup := []int{lead}, idx.Doc(lead).Group
	for _, m := range r.window[1:] {
		if idx.Doc(m).Group == leadGroup && atLeast(idx.DocSimilarity(lead, m), p.DuplicateThreshold) {
			twins = append(twins, m)
		}
	}
	if len(twins) > 1 {
		return r.decision(Duplicate, twins), nil
	}
	tied := []int{lead}
	for _, m := range r.window[1:] {
		if !r.atLeast(m, p.SimilarityFloor) || !(r.scores[lead]-r.scores[m] < p.Margin) {
			break
		}
		tied = append(tied, m)
	}
	if len(tied) > 1 {
		return r.decision(Ambiguous, tied), nil
	}
	return r.decision(Bind, tied), nil
}

// Shortlist returns up to k docs at or above the floor, best first (or the
// lone solo candidate).
//
// Unlike Resolve it applies no margin and no twin check: it lists what
// clears the floor. The solo rule looks at the overall runner-up even when
// k is 1, so Shortlist is empty exactly when Resolve would say Absent.
// k ≤ 0 returns nothing without scoring.
func Shortlist(ctx context.Context, idx Index, p Policy, need string, k int) ([]int, error) {
	if k <= 0 {
		return nil, nil
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r, _, p, err := rank(ctx, idx, p, need, func(Policy) int { return max(k, 2) })
	if err != nil {
		return nil, err
	}
	var out []int
	for _, m := range r.window[:min(k, len(r.window))] {
		if r.atLeast(m, p.SimilarityFloor) {
			out = append(out, m)
		}
	}
	if len(out) == 0 && r.solo(p.SoloFloor) {
		out = append(out, r.window[0])
	}
	return out, nil
}

// ranking is one scored need: every doc's score and the window of the
// best few, ordered by score (non-finite last) then catalog position.
type ranking struct {
	scores []float64
	window []int
}

// rank scores need and orders the window, whose size depends on the
// policy that applies. It returns the index that scored the need and that
// policy: for a Fallback index whose embedder is down, its lexical side
// and p.Lexical (when set), so scores are judged on their own scale.
func rank(ctx context.Context, idx Index, p Policy, need string, window func(Policy) int) (ranking, Index, Policy, error) {
	var (
		scores []float64
		err    error
	)
	if fx, ok := idx.(*fallbackIndex); ok {
		var sub Index
		scores, sub, err = fx.scoreFrom(ctx, need)
		if err == nil {
			idx, p = sub, fallbackPolicy(fx.lexical(sub), p)
		}
	} else {
		scores, err = idx.Score(ctx, need)
	}
	if err != nil {
		return ranking{}, nil, p, fmt.Errorf("score the need against %d candidates: %w", idx.Len(), err)
	}
	if len(scores) != idx.Len() {
		return ranking{}, nil, p, fmt.Errorf("score the need: the index returned %d scores for %d candidates", len(scores), idx.Len())
	}
	size := window(p)
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		fa, fb := finite(scores[a]), finite(scores[b])
		switch {
		case fa && fb:
			return cmp.Compare(scores[b], scores[a])
		case fa:
			return -1
		case fb:
			return 1
		}
		return 0
	})
	return ranking{scores: scores, window: order[:min(size, len(order))]}, idx, p, nil
}

// fallbackPolicy is the policy for scores from a lexical side (lexical
// true) under p.
func fallbackPolicy(lexical bool, p Policy) Policy {
	if lexical && p.Lexical != nil {
		return *p.Lexical
	}
	return p
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// atLeast is the inclusive threshold test; a non-finite score never
// passes, so a broken score cannot bind anything.
func atLeast(score, threshold float64) bool { return finite(score) && score >= threshold }

func (r ranking) atLeast(m int, threshold float64) bool { return atLeast(r.scores[m], threshold) }

// solo is the lone-candidate rule: the leader clears SoloFloor and no
// runner-up does.
func (r ranking) solo(floor float64) bool {
	if len(r.window) == 0 || !r.atLeast(r.window[0], floor) {
		return false
	}
	return len(r.window) < 2 || !r.atLeast(r.window[1], floor)
}

func (r ranking) decision(o Outcome, members []int) Decision {
	scores := make([]float64, len(members))
	for i, m := range members {
		scores[i] = r.scores[m]
	}
	return Decision{Outcome: o, Members: members, Scores: scores}
}
