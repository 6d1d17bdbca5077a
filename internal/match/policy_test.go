package match

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// fakeIndex has fixed scores and doc similarities, so these tests exercise
// the policy alone. Thresholds and scores are dyadic fractions, exact in
// binary, so "exactly at" boundaries really are exact.
type fakeIndex struct {
	docs   []Doc
	scores []float64
	sim    map[[2]int]float64
	calls  int
	err    error
}

func (f *fakeIndex) Score(context.Context, string) ([]float64, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return slices.Clone(f.scores), nil
}

func (f *fakeIndex) DocSimilarity(i, j int) float64 {
	if i == j {
		return 1
	}
	return f.sim[[2]int{min(i, j), max(i, j)}]
}

func (f *fakeIndex) Doc(i int) Doc { return f.docs[i] }
func (f *fakeIndex) Len() int      { return len(f.docs) }

// fake builds an index whose docs are all on server "s" unless groups
// says otherwise.
func fake(scores []float64, groups ...string) *fakeIndex {
	f := &fakeIndex{scores: scores, sim: map[[2]int]float64{}}
	for i := range scores {
		g := "s"
		if i < len(groups) {
			g = groups[i]
		}
		f.docs = append(f.docs, Doc{Group: g, Name: string(rune('a' + i))})
	}
	return f
}

func (f *fakeIndex) twin(i, j int, s float64) *fakeIndex {
	f.sim[[2]int{min(i, j), max(i, j)}] = s
	return f
}

// testPolicy: floor 0.75, margin 0.125, duplicate 0.875, solo 0.5.
func testPolicy(topK int) Policy {
	return Policy{SimilarityFloor: 0.75, Margin: 0.125, DuplicateThreshold: 0.875, SoloFloor: 0.5, TopK: topK}
}

func TestResolvePolicy(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name    string
		idx     *fakeIndex
		topK    int
		want    Outcome
		members []int
	}{
		{"empty catalog", fake(nil), 3, Absent, nil},
		{"nothing near the floors", fake([]float64{0.25, 0.125}), 3, Absent, nil},
		{"clear leader", fake([]float64{0.25, 0.9375, 0.5}), 3, Bind, []int{1}},
		{"score exactly at floor counts", fake([]float64{0.75, 0.5625}), 3, Bind, []int{0}},
		{"gap exactly equal to margin binds", fake([]float64{0.875, 0.75}), 3, Bind, []int{0}},
		{"gap under margin is ambiguous", fake([]float64{0.875, 0.8125}), 3, Ambiguous, []int{0, 1}},
		{"close runner-up below floor does not tie", fake([]float64{0.8125, 0.71875}), 3, Bind, []int{0}},
		{"tied group is consecutive", fake([]float64{0.9375, 0.875, 0.25, 0.84375}), 3, Ambiguous, []int{0, 1, 3}},
		{"tie stops at the first gap", fake([]float64{1, 0.9375, 0.75, 0.25}), 3, Ambiguous, []int{0, 1}},
		{"group bounded by top_k", fake([]float64{0.9375, 0.9375, 0.9375, 0.9375}), 3, Ambiguous, []int{0, 1, 2}},
		{"top_k 1 still windows two", fake([]float64{0.9375, 0.9375, 0.9375}), 1, Ambiguous, []int{0, 1}},
		{"exact ties keep catalog order", fake([]float64{0.5, 0.9375, 0.9375}), 3, Ambiguous, []int{1, 2}},
		{"solo: lone candidate between floors binds", fake([]float64{0.625}), 3, Bind, []int{0}},
		{"solo: leader exactly at solo floor binds", fake([]float64{0.5, 0.25}), 3, Bind, []int{0}},
		{"solo: leader under solo floor", fake([]float64{0.4375, 0.25}), 3, Absent, nil},
		{"solo: runner-up exactly at solo floor", fake([]float64{0.625, 0.5}), 3, Absent, nil},
		{"solo: runner-up just under solo floor", fake([]float64{0.625, 0.4375}), 3, Bind, []int{0}},
		{"non-finite scores sort last", fake([]float64{nan, 0.9375, inf, 0.25}), 3, Bind, []int{1}},
		{"non-finite scores never bind", fake([]float64{nan, inf, math.Inf(-1)}), 3, Absent, nil},
		{"twins: same group at threshold", fake([]float64{0.9375, 0.25}).twin(0, 1, 0.875), 3, Duplicate, []int{0, 1}},
		{"twins win over margin", fake([]float64{0.9375, 0.8125, 0.125}).twin(0, 2, 1), 3, Duplicate, []int{0, 2}},
		{"twins just under threshold", fake([]float64{0.9375, 0.25}).twin(0, 1, 0.8671875), 3, Bind, []int{0}},
		{"twins across groups are ambiguous", fake([]float64{0.9375, 0.875}, "a", "b").twin(0, 1, 1), 3, Ambiguous, []int{0, 1}},
		{"twins across groups, apart", fake([]float64{0.9375, 0.25}, "a", "b").twin(0, 1, 1), 3, Bind, []int{0}},
		{"twins only of the leader", fake([]float64{0.9375, 0.5, 0.25}).twin(1, 2, 1), 3, Bind, []int{0}},
		{"twins outside the window", fake([]float64{0.9375, 0.5, 0.375, 0.25}).twin(0, 3, 1), 3, Bind, []int{0}},
		{"twins bounded by top_k", fake([]float64{1, 0.5, 0.5, 0.5}).twin(0, 1, 1).twin(0, 2, 1).twin(0, 3, 1), 3, Duplicate, []int{0, 1, 2}},
		{"leader under floor: solo before twins", fake([]float64{0.625, 0.25}).twin(0, 1, 1), 3, Bind, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Resolve(context.Background(), tt.idx, testPolicy(tt.topK), "need")
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tt.want || !slices.Equal(d.Members, tt.members) {
				t.Fatalf("Resolve = %v %v, want %v %v", d.Outcome, d.Members, tt.want, tt.members)
			}
			if len(d.Scores) != len(d.Members) {
				t.Fatalf("%d scores for %d members", len(d.Scores), len(d.Members))
			}
			for i, m := range d.Members {
				if d.Scores[i] != tt.idx.scores[m] {
					t.Fatalf("Scores[%d] = %v, want member %d's score %v", i, d.Scores[i], m, tt.idx.scores[m])
				}
			}
		})
	}
}

func TestShortlistPolicy(t *testing.T) {
	tests := []struct {
		name string
		idx  *fakeIndex
		k    int
		want []int
	}{
		{"only above floor", fake([]float64{0.25, 0.9375, 0.75, 0.625}), 3, []int{1, 2}},
		{"bounded by k", fake([]float64{0.9375, 0.875, 0.8125}), 2, []int{0, 1}},
		{"no margin applied", fake([]float64{1, 0.75}), 3, []int{0, 1}},
		{"no twin check", fake([]float64{1, 0.9375}).twin(0, 1, 1), 3, []int{0, 1}},
		{"lone solo candidate", fake([]float64{0.625, 0.25}), 3, []int{0}},
		{"empty when two sit between the floors", fake([]float64{0.625, 0.5625}), 3, nil},
		{"solo rule sees the runner-up even when k is 1", fake([]float64{0.625, 0.5625}), 1, nil},
		{"nothing near", fake([]float64{0.25, 0.125}), 3, nil},
		{"empty catalog", fake(nil), 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Shortlist(context.Background(), tt.idx, testPolicy(3), "need", tt.k)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Shortlist = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestShortlistAgreesWithResolve checks the documented contract: the
// shortlist is empty exactly when Resolve abstains, and a bind against a
// field below the floor lists only the bound doc.
func TestShortlistAgreesWithResolve(t *testing.T) {
	ctx := context.Background()
	for _, scores := range [][]float64{
		{0.25, 0.125}, {0.625}, {0.625, 0.5625}, {0.625, 0.25}, {0.9375, 0.25}, {0.75, 0.5},
		{0.4375}, {0.875, 0.8125, 0.25},
	} {
		idx := fake(scores)
		d, err := Resolve(ctx, idx, testPolicy(3), "need")
		if err != nil {
			t.Fatal(err)
		}
		sl, err := Shortlist(ctx, idx, testPolicy(3), "need", 3)
		if err != nil {
			t.Fatal(err)
		}
		if (d.Outcome == Absent) != (len(sl) == 0) {
			t.Errorf("scores %v: Resolve %v but Shortlist %v", scores, d.Outcome, sl)
		}
		if d.Outcome == Bind && len(scores) > 1 && scores[d.Members[0]] >= 0.75 && !slices.Equal(sl, d.Members) {
			t.Errorf("scores %v: bound %v but shortlisted %v", scores, d.Members, sl)
		}
		if d.Outcome == Ambiguous && !slices.Equal(sl, d.Members) {
			t.Errorf("scores %v: ambiguous %v but shortlisted %v", scores, d.Members, sl)
		}
	}
}

func TestShortlistZeroKDoesNotScore(t *testing.T) {
	for _, k := range []int{0, -1} {
		idx := fake([]float64{1})
		got, err := Shortlist(context.Background(), idx, testPolicy(3), "need", k)
		if err != nil || len(got) != 0 {
			t.Fatalf("Shortlist(k=%d) = %v, %v; want empty", k, got, err)
		}
		if idx.calls != 0 {
			t.Fatalf("Shortlist(k=%d) scored the need %d times", k, idx.calls)
		}
	}
}

func TestScoringFailures(t *testing.T) {
	ctx := context.Background()
	cause := errors.New("embedder down")
	idx := fake([]float64{1})
	idx.err = cause
	if _, err := Resolve(ctx, idx, testPolicy(3), "need"); !errors.Is(err, cause) {
		t.Fatalf("Resolve error = %v, want it to wrap %v", err, cause)
	}
	if _, err := Shortlist(ctx, idx, testPolicy(3), "need", 3); !errors.Is(err, cause) {
		t.Fatalf("Shortlist error = %v, want it to wrap %v", err, cause)
	}
	short := fake([]float64{1, 1})
	short.scores = short.scores[:1]
	if _, err := Resolve(ctx, short, testPolicy(3), "need"); err == nil || !strings.Contains(err.Error(), "1 scores for 2 candidates") {
		t.Fatalf("Resolve with a short score slice: %v", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	valid := []Policy{
		{TopK: 1},
		{SimilarityFloor: 1, Margin: 1, DuplicateThreshold: 1, SoloFloor: 1, TopK: 1},
		LexicalPolicy(), LexicalModelPolicy(), RetrievalPolicy(), ReferencePolicy(),
	}
	for _, p := range valid {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", p, err)
		}
	}
	fields := map[string]func(*Policy, float64){
		"similarity_floor":    func(p *Policy, v float64) { p.SimilarityFloor = v },
		"margin":              func(p *Policy, v float64) { p.Margin = v },
		"duplicate_threshold": func(p *Policy, v float64) { p.DuplicateThreshold = v },
		"solo_floor":          func(p *Policy, v float64) { p.SoloFloor = v },
	}
	for name, set := range fields {
		for _, v := range []float64{-0.001, 1.001, math.NaN(), math.Inf(1), math.Inf(-1)} {
			p := ReferencePolicy()
			set(&p, v)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s = %v: Validate() = %v, want an error naming %s", name, v, err, name)
			}
			if _, rerr := Resolve(context.Background(), fake([]float64{1}), p, "x"); rerr == nil {
				t.Errorf("%s = %v: Resolve accepted the policy", name, v)
			}
		}
	}
	p := ReferencePolicy()
	p.TopK = 0
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "top_k") {
		t.Errorf("top_k 0: Validate() = %v", err)
	}
}

func TestReferencePolicyDefaults(t *testing.T) {
	want := Policy{SimilarityFloor: 0.825, SoloFloor: 0.5, Margin: 0.05, DuplicateThreshold: 0.98, TopK: 3}
	if got := ReferencePolicy(); got != want {
		t.Fatalf("ReferencePolicy() = %+v, want %+v", got, want)
	}
	if p := RetrievalPolicy(); p.SimilarityFloor != 0 || p.TopK != 3 {
		t.Fatalf("RetrievalPolicy() = %+v, want floor 0 and top_k 3", p)
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Absent: "absent", Bind: "bind", Ambiguous: "ambiguous", Duplicate: "duplicate", 0: "Outcome(0)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, got, want)
		}
	}
}

func TestNearDuplicates(t *testing.T) {
	idx := fake([]float64{0, 0, 0, 0}, "a", "b", "a", "c").twin(0, 1, 0.875).twin(1, 3, 0.9375).twin(0, 2, 0.8671875)
	got, err := NearDuplicates(idx, testPolicy(3), []int{3, 1, 0, 2, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []Pair{{A: 0, B: 1, Similarity: 0.875}, {A: 1, B: 3, Similarity: 0.9375}}
	if !slices.Equal(got, want) {
		t.Fatalf("NearDuplicates = %v, want %v (inclusive threshold, any group, catalog order, repeats once)", got, want)
	}
	if got, err := NearDuplicates(idx, testPolicy(3), []int{1, 1}); err != nil || len(got) != 0 {
		t.Fatalf("a repeated member is not its own duplicate: %v, %v", got, err)
	}
	_, err = NearDuplicates(idx, testPolicy(3), []int{0, 7, 9})
	if err == nil || !strings.Contains(err.Error(), "member 7") {
		t.Fatalf("NearDuplicates with a missing member: %v, want an error naming 7", err)
	}
}
