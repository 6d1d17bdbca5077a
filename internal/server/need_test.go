package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/match"
)

// The six-prompt retrieval fixture of mcp-server §11 (retrieval/tests.rs).
var sixPrompts = map[string]string{
	"stakeholder.md": luaPrompt("stakeholder_position", "Build a stakeholder position report for one entity.", "return 1"),
	"paper.md":       luaPrompt("paper_summary", "Summarize an academic paper into its claims, methods and findings.", "return 1"),
	"minutes.md":     luaPrompt("meeting_minutes", "Write meeting minutes from a transcript, with decisions and action items.", "return 1"),
	"review.md":      luaPrompt("code_review", "Review a code change for bugs, style and missing tests.", "return 1"),
	"release.md":     luaPrompt("release_notes", "Draft release notes from a list of commits.", "return 1"),
	"translate.md":   luaPrompt("translate_text", "Translate a text into another language.", "return 1"),
}

func TestNeedPromptShortlistsBestFirst(t *testing.T) {
	h := newHarness(t, fixture{prompts: sixPrompts})
	for _, tc := range []struct{ capability, first string }{
		{"Draft release notes from a range of commits.", "release_notes"},
		{"Build a stakeholder position report for one entity.", "stakeholder_position"},
	} {
		res := h.ok(ToolNeedPrompt, map[string]any{"capability": tc.capability})
		if res.IsError {
			t.Fatalf("%q: isError %q", tc.capability, textOf(t, res))
		}
		var structured, fromText struct {
			Prompts []map[string]string `json:"prompts"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &structured); err != nil {
			t.Fatal(err)
		}
		text := textOf(t, res)
		if err := json.Unmarshal([]byte(text), &fromText); err != nil {
			t.Fatalf("text is not JSON: %q", text)
		}
		if !strings.Contains(text, "\n  ") {
			t.Errorf("text is not pretty-printed: %q", text)
		}
		if !mapsEqual(map[string]any{"a": structured}, map[string]any{"a": fromText}) {
			t.Errorf("text %s and structuredContent %s differ", text, b)
		}
		ps := structured.Prompts
		if len(ps) == 0 || len(ps) > 3 || ps[0]["name"] != tc.first {
			t.Fatalf("%q: candidates %v, want %s first", tc.capability, ps, tc.first)
		}
		for _, p := range ps {
			if len(p) != 2 || p["description"] == "" {
				t.Errorf("candidate %v is not {name, description}", p)
			}
		}
	}
}

func TestNeedPromptRefusesAnOverlongCapability(t *testing.T) {
	h := newHarness(t, fixture{prompts: sixPrompts})
	res := h.ok(ToolNeedPrompt, map[string]any{"capability": strings.Repeat("x", 4097)})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(textOf(t, res), "4097 bytes") {
		t.Fatalf("got %+v %q", res, textOf(t, res))
	}
}

// need_prompt is published whenever the catalog ranks prompts; when the
// index could not be built at boot it answers with list_prompts instead.
func TestNeedPromptWithoutAnIndexPointsAtListPrompts(t *testing.T) {
	h := newHarness(t, fixture{catalog: catalog.Options{Ranker: unindexableRanker{}}})
	res := h.ok(ToolNeedPrompt, map[string]any{"capability": "Summarize a text."})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(textOf(t, res), "list_prompts") {
		t.Fatalf("got %+v %q", res, textOf(t, res))
	}
}

// unindexableRanker cannot index, like an embeddings endpoint that is down
// at boot: the catalog keeps retrieval on with an idle index.
type unindexableRanker struct{}

func (unindexableRanker) Index(context.Context, []match.Doc) (match.Index, error) {
	return nil, errors.New("the embeddings endpoint is unreachable")
}

// brokenRanker indexes fine and fails every query, like an embeddings
// endpoint that went away after boot.
type brokenRanker struct{ match.Ranker }

func (r brokenRanker) Index(ctx context.Context, docs []match.Doc) (match.Index, error) {
	idx, err := r.Ranker.Index(ctx, docs)
	return brokenIndex{idx}, err
}

type brokenIndex struct{ match.Index }

func (brokenIndex) Score(context.Context, string) ([]float64, error) {
	return nil, errors.New("the embeddings endpoint is unreachable")
}

func TestNeedPromptRankingFailureIsAnInternalError(t *testing.T) {
	h := newHarness(t, fixture{catalog: catalog.Options{Ranker: brokenRanker{match.NewLexical()}}})
	we := h.protocolError(ToolNeedPrompt, map[string]any{"capability": "Summarize a text."})
	if we.Code != jsonrpc.CodeInternalError || !strings.HasPrefix(we.Message, "rank prompts for the capability") {
		t.Fatalf("code %d message %q", we.Code, we.Message)
	}
}
