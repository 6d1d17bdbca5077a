package match

import (
	"fmt"
	"slices"
)

// Pair is two indexed docs and their similarity.
type Pair struct {
	A, B       int
	Similarity float64
}

// NearDuplicates reports every pair among members whose doc-to-doc
// similarity reaches p.DuplicateThreshold, in catalog order (A < B, pairs
// sorted by A then B). Unlike Resolve's twin rule it ignores groups: it
// serves the scope check that refuses to show a model two bound tools it
// could not tell apart, wherever they come from. Repeated members count
// once; a member outside the index is an error, reported before any
// comparison.
func NearDuplicates(idx Index, p Policy, members []int) ([]Pair, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if fx, ok := idx.(*fallbackIndex); ok {
		// Doc-to-doc similarity is on the scale of the side the docs are
		// ranked on now, so is the threshold.
		idx = fx.current()
		p = fallbackPolicy(fx.lexical(idx), p)
	}
	for _, m := range members {
		if m < 0 || m >= idx.Len() {
			return nil, fmt.Errorf("near-duplicate check: member %d is not in the index of %d docs", m, idx.Len())
		}
	}
	ids := slices.Clone(members)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []Pair
	for x, a := range ids {
		for _, b := range ids[x+1:] {
			if s := idx.DocSimilarity(a, b); atLeast(s, p.DuplicateThreshold) {
				out = append(out, Pair{A: a, B: b, Similarity: s})
			}
		}
	}
	return out, nil
}
