package match

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture is one calibration catalog from testdata. Every expectation in
// it is asserted, so moving a threshold in policy.go that breaks any
// fixture fails here. Run with -v to see the score table CALIBRATION.md
// records.
type fixture struct {
	About  string
	Kind   string // tools, models or prompts
	Policy string // lexical, lexical-model or retrieval
	Docs   []struct {
		ID          string
		Description string
		Params      []string
	}
	Cases []struct {
		Need      string
		Outcome   string
		Members   []string
		Shortlist *[]string // checked when present (k = TopK)
		First     string    // shortlist leader
		Count     int       // shortlist length, when non-zero
	}
	Twins    [][2]string `json:"twins"`
	NotTwins [][2]string `json:"not_twins"`
}

func (f fixture) docs(t *testing.T) ([]Doc, []string) {
	docs := make([]Doc, len(f.Docs))
	ids := make([]string, len(f.Docs))
	for i, d := range f.Docs {
		ids[i] = d.ID
		switch f.Kind {
		case "tools":
			server, name, ok := strings.Cut(d.ID, "/")
			if !ok {
				t.Fatalf("tool id %q is not server/name", d.ID)
			}
			docs[i] = ToolDoc(server, name, d.Description, d.Params)
		case "models":
			docs[i] = ModelDoc(d.ID, d.Description)
		case "prompts":
			docs[i] = PromptDoc(d.ID, d.Description)
		default:
			t.Fatalf("unknown fixture kind %q", f.Kind)
		}
	}
	return docs, ids
}

func (f fixture) policy(t *testing.T) Policy {
	switch f.Policy {
	case "lexical":
		return LexicalPolicy()
	case "lexical-model":
		return LexicalModelPolicy()
	case "retrieval":
		return RetrievalPolicy()
	}
	t.Fatalf("unknown fixture policy %q", f.Policy)
	return Policy{}
}

func loadFixtures(t *testing.T) map[string]fixture {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in testdata: %v", err)
	}
	out := make(map[string]fixture)
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f fixture
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = f
	}
	return out
}

func names(ids []string, members []int) []string {
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = ids[m]
	}
	return out
}

// scoreTable renders every doc's score for a need, best first.
func scoreTable(ids []string, scores []float64) string {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	var b strings.Builder
	for _, i := range order {
		fmt.Fprintf(&b, " %s=%.3f", ids[i], scores[i])
	}
	return b.String()
}

func TestCalibrationFixtures(t *testing.T) {
	ctx := context.Background()
	fixtures := loadFixtures(t)
	for _, name := range slices.Sorted(maps.Keys(fixtures)) {
		f := fixtures[name]
		t.Run(name, func(t *testing.T) {
			docs, ids := f.docs(t)
			pol := f.policy(t)
			idx, err := NewLexical().Index(ctx, docs)
			if err != nil {
				t.Fatal(err)
			}
			id := func(s string) int {
				i := slices.Index(ids, s)
				if i < 0 {
					t.Fatalf("fixture names unknown doc %q", s)
				}
				return i
			}
			for _, c := range f.Cases {
				scores, err := idx.Score(ctx, c.Need)
				if err != nil {
					t.Fatal(err)
				}
				table := scoreTable(ids, scores)
				t.Logf("need %q:%s", c.Need, table)
				if c.Outcome != "" {
					d, err := Resolve(ctx, idx, pol, c.Need)
					if err != nil {
						t.Fatal(err)
					}
					if d.Outcome.String() != c.Outcome || !slices.Equal(names(ids, d.Members), c.Members) {
						t.Errorf("Resolve(%q) = %v %q, want %s %q\nscores:%s",
							c.Need, d.Outcome, names(ids, d.Members), c.Outcome, c.Members, table)
					}
				}
				sl, err := Shortlist(ctx, idx, pol, c.Need, pol.TopK)
				if err != nil {
					t.Fatal(err)
				}
				got := names(ids, sl)
				if c.Shortlist != nil && !slices.Equal(got, *c.Shortlist) {
					t.Errorf("Shortlist(%q) = %q, want %q\nscores:%s", c.Need, got, *c.Shortlist, table)
				}
				if c.First != "" && (len(got) == 0 || got[0] != c.First) {
					t.Errorf("Shortlist(%q) = %q, want %q first\nscores:%s", c.Need, got, c.First, table)
				}
				if c.Count != 0 && len(got) != c.Count {
					t.Errorf("Shortlist(%q) has %d entries, want %d", c.Need, len(got), c.Count)
				}
			}
			for _, p := range f.Twins {
				s := idx.DocSimilarity(id(p[0]), id(p[1]))
				t.Logf("twins %s ~ %s: %.3f", p[0], p[1], s)
				if s < pol.DuplicateThreshold {
					t.Errorf("%s ~ %s similarity %.3f, below duplicate_threshold %.3f", p[0], p[1], s, pol.DuplicateThreshold)
				}
			}
			for _, p := range f.NotTwins {
				s := idx.DocSimilarity(id(p[0]), id(p[1]))
				t.Logf("not twins %s ~ %s: %.3f", p[0], p[1], s)
				if s >= pol.DuplicateThreshold {
					t.Errorf("%s ~ %s similarity %.3f reaches duplicate_threshold %.3f", p[0], p[1], s, pol.DuplicateThreshold)
				}
			}
		})
	}
}

// TestRetrievalNeedsFloorZero mirrors the reference's retrieval test: a
// conversational need that the tool policy abstains on still gets a
// ranked list under need_prompt's floor of 0.
func TestRetrievalNeedsFloorZero(t *testing.T) {
	ctx := context.Background()
	f := loadFixtures(t)["prompts"]
	docs, ids := f.docs(t)
	idx := lexIdx(t, docs...)
	const need = "I need to know where Herb Sutter stands on ABI stability."
	if sl, err := Shortlist(ctx, idx, LexicalPolicy(), need, 3); err != nil || len(sl) != 0 {
		t.Fatalf("tool policy shortlist = %q, %v; want empty", names(ids, sl), err)
	}
	sl, err := Shortlist(ctx, idx, RetrievalPolicy(), need, 3)
	if err != nil || len(sl) != 3 || ids[sl[0]] != "stakeholder_position" {
		t.Fatalf("retrieval shortlist = %q, %v; want 3 led by stakeholder_position", names(ids, sl), err)
	}
}

// TestLexicalRetrievalWithholdsUnrelatedPrompts: under the lexical ranker a
// score of 0 means no shared term, so need_prompt lists only prompts that
// share one, and nothing for a capability unrelated to every prompt.
func TestLexicalRetrievalWithholdsUnrelatedPrompts(t *testing.T) {
	ctx := context.Background()
	f := loadFixtures(t)["prompts"]
	docs, ids := f.docs(t)
	idx := lexIdx(t, docs...)
	sl, err := Shortlist(ctx, idx, LexicalRetrievalPolicy(), "I need to know where Herb Sutter stands on ABI stability.", 3)
	if err != nil || len(sl) != 1 || ids[sl[0]] != "stakeholder_position" {
		t.Fatalf("shortlist = %q, %v; want only stakeholder_position", names(ids, sl), err)
	}
	sl, err = Shortlist(ctx, idx, LexicalRetrievalPolicy(), "write up the changes in this release for users", 3)
	if err != nil || len(sl) != 2 || ids[sl[0]] != "release_notes" {
		t.Fatalf("shortlist = %q, %v; want release_notes then the one other prompt sharing a term", names(ids, sl), err)
	}
	if sl, err := Shortlist(ctx, idx, LexicalRetrievalPolicy(), "Quantum chromodynamics on a lattice", 3); err != nil || len(sl) != 0 {
		t.Fatalf("unrelated shortlist = %q, %v; want none", names(ids, sl), err)
	}
	if err := LexicalRetrievalPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
}
