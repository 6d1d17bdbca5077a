package gateway_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

type entry = map[string]any

func full(id string) entry {
	return entry{"id": id, "object": "model", "description": "Model " + id, "context": 8192, "thinking": "never"}
}

func with(e entry, kv ...any) entry {
	out := entry{}
	for k, v := range e {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestModelsDefaultEntry(t *testing.T) {
	s := gatewaytest.New(t)
	cat, err := newClient(t, s).Models(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := gateway.Catalog{Models: []gateway.Model{{
		ID: "test-model", Description: "A general assistant model for tests", Context: 32768,
		Thinking: gateway.ThinkingNever, Dialect: gateway.DialectOpenAI,
	}}}
	if !reflect.DeepEqual(cat, want) {
		t.Errorf("catalog = %+v\nwant %+v", cat, want)
	}
}

func TestModelsDialects(t *testing.T) {
	s := gatewaytest.New(t)
	s.SetModels(
		with(full("a"), "tool_dialect", "openai", "tools_mode", "native"),
		with(full("b"), "tool_dialect", "gemma3_tool_code", "tools_mode", "emulated"),
		with(full("c"), "tools_mode", "native"),
		with(full("d"), "thinking", "switchable", "tool_dialect", nil),
		with(full("e"), "thinking", "always", "tool_dialect", nil, "tools_mode", nil),
	)
	cat, err := newClient(t, s).Models(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]gateway.Model{}
	for _, m := range cat.Models {
		got[m.ID] = m
	}
	for id, want := range map[string]gateway.Dialect{"a": "openai", "b": "gemma3_tool_code", "c": "openai", "d": "openai", "e": "openai"} {
		if got[id].Dialect != want {
			t.Errorf("%s: dialect %q, want %q", id, got[id].Dialect, want)
		}
	}
	if got["d"].Thinking != gateway.ThinkingSwitchable || got["e"].Thinking != gateway.ThinkingAlways {
		t.Errorf("thinking modes: %+v", cat.Models)
	}
	if ids := []string{cat.Models[0].ID, cat.Models[4].ID}; ids[0] != "a" || ids[1] != "e" {
		t.Errorf("gateway order not kept: %v", ids)
	}
}

func TestModelsMalformedCatalog(t *testing.T) {
	tests := []struct {
		name    string
		entries []entry
		raw     string // used instead of entries when set
		want    string
	}{
		{name: "duplicate ids", entries: []entry{full("x"), full("y"), full("x")}, want: `model id "x" is listed twice`},
		{name: "zero context", entries: []entry{with(full("x"), "context", 0)}, want: `model "x": context is 0`},
		{name: "negative context", entries: []entry{with(full("x"), "context", -5)}, want: "context is not a whole number"},
		{name: "fractional context", entries: []entry{with(full("x"), "context", 1.5)}, want: "context is not a whole number"},
		{name: "context too big", entries: []entry{with(full("x"), "context", 1<<33)}, want: "fits in 32 bits"},
		{name: "context string", entries: []entry{with(full("x"), "context", "8k")}, want: "context is not a whole number"},
		{name: "unknown thinking", entries: []entry{with(full("x"), "thinking", "sometimes")}, want: `thinking must be "never", "always" or "switchable"`},
		{name: "unknown dialect", entries: []entry{with(full("x"), "tool_dialect", "hermes")}, want: `tool_dialect "hermes"`},
		{name: "openai but emulated", entries: []entry{with(full("x"), "tools_mode", "emulated")}, want: `tools_mode "emulated" contradicts tool_dialect "openai"`},
		{name: "gemma but native", entries: []entry{with(full("x"), "tool_dialect", "gemma3_tool_code", "tools_mode", "native")}, want: `tools_mode "native" contradicts`},
		{name: "unknown tools_mode", entries: []entry{with(full("x"), "tools_mode", "magic")}, want: "contradicts"},
		{name: "description not a string", entries: []entry{with(full("x"), "description", 7)}, want: "description is not a string"},
		{name: "id missing", entries: []entry{with(full("x"), "id", nil)}, want: "data[0]: id is missing"},
		{name: "id not a string", entries: []entry{with(full("x"), "id", 12)}, want: "id is missing or not a string"},
		{name: "id blank", entries: []entry{with(full("x"), "id", " ")}, want: "is blank"},
		{name: "id with record separator", entries: []entry{with(full("x"), "id", "a\u001eb")}, want: "control character"},
		{name: "id with newline", entries: []entry{with(full("x"), "id", "a\nb")}, want: "control character"},
		{name: "entry not an object", raw: `{"data":["x"]}`, want: "data[0]: the entry is not an object"},
		{name: "no data", raw: `{"object":"list"}`, want: "no data array"},
		{name: "data not an array", raw: `{"data":{}}`, want: "no data array"},
		{name: "not JSON", raw: `<html>`, want: "the body is not a JSON object"},
		{name: "JSON null", raw: `null`, want: "the body is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := gatewaytest.New(t)
			if tt.raw != "" {
				s.SetModelsReply(gatewaytest.Malformed(tt.raw))
			} else {
				s.SetModels(tt.entries...)
			}
			_, err := newClient(t, s).Models(t.Context(), nil)
			ge := asError(t, err, gateway.KindMalformed)
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "gateway sent a malformed reply to GET /models: ") {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
			if ge.Status != 200 {
				t.Errorf("Status = %d", ge.Status)
			}
		})
	}
}

func TestModelsPlainOpenAIListWithOverrides(t *testing.T) {
	s := gatewaytest.New(t)
	s.SetModels(
		entry{"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"},
		entry{"id": "llama3", "object": "model", "created": 1, "owned_by": "library", "max_model_len": 8192},
		entry{"id": "qwen", "object": "model", "description": "Served prose", "context": 4096, "thinking": nil},
	)
	c := newClient(t, s)

	cat, err := c.Models(t.Context(), nil)
	if err != nil {
		t.Fatalf("a plain OpenAI list must load: %v", err)
	}
	want := gateway.Catalog{Skipped: []gateway.SkippedModel{
		{ID: "gpt-4o", Reason: `no description, context or thinking: add [models."gpt-4o"] description = "...", context = <tokens>, thinking = "never"|"always"|"switchable"`},
		// max_model_len (vLLM's key) gives the context window.
		{ID: "llama3", Reason: `no description or thinking: add [models."llama3"] description = "...", thinking = "never"|"always"|"switchable"`},
		{ID: "qwen", Reason: `no thinking: add [models."qwen"] thinking = "never"|"always"|"switchable"`},
	}}
	if len(cat.Models) != 0 || !reflect.DeepEqual(cat.Skipped, want.Skipped) {
		t.Errorf("without overrides:\n%+v\nwant\n%+v", cat, want)
	}

	cat, err = c.Models(t.Context(), map[string]gateway.ModelOverride{
		"llama3": {Description: "Local general model", Context: 8192, Thinking: gateway.ThinkingNever},
		"qwen":   {Description: "Override prose", Thinking: gateway.ThinkingSwitchable, Dialect: gateway.DialectGemma3},
		"gpt-4o": {Description: "Only a description"},
		"ghost":  {Description: "Not served"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantModels := []gateway.Model{
		{ID: "llama3", Description: "Local general model", Context: 8192, Thinking: "never", Dialect: "openai"},
		{ID: "qwen", Description: "Override prose", Context: 4096, Thinking: "switchable", Dialect: "gemma3_tool_code"},
	}
	wantSkipped := []gateway.SkippedModel{
		{ID: "gpt-4o", Reason: `no context or thinking: add [models."gpt-4o"] context = <tokens>, thinking = "never"|"always"|"switchable"`},
	}
	// Every served id has its own table, so none is suggested for ghost.
	wantUnmatched := []gateway.UnmatchedOverride{{ID: "ghost"}}
	if !reflect.DeepEqual(cat.Models, wantModels) || !reflect.DeepEqual(cat.Skipped, wantSkipped) || !reflect.DeepEqual(cat.Unmatched, wantUnmatched) {
		t.Errorf("with overrides:\n%+v\nwant models %+v\nskipped %+v\nunmatched %+v", cat, wantModels, wantSkipped, wantUnmatched)
	}
}

func TestModelsOverrideWinsOverServedValues(t *testing.T) {
	s := gatewaytest.New(t)
	s.SetModels(full("m"))
	cat, err := newClient(t, s).Models(t.Context(), map[string]gateway.ModelOverride{
		"m": {Context: 131072, Thinking: gateway.ThinkingAlways},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := gateway.Model{ID: "m", Description: "Model m", Context: 131072, Thinking: "always", Dialect: "openai"}
	if len(cat.Models) != 1 || cat.Models[0] != want {
		t.Errorf("got %+v, want %+v", cat.Models, want)
	}
}

func TestModelsInvalidOverrideSendsNothing(t *testing.T) {
	s := gatewaytest.New(t)
	c := newClient(t, s)
	for _, o := range []gateway.ModelOverride{{Thinking: "maybe"}, {Dialect: "hermes"}} {
		_, err := c.Models(t.Context(), map[string]gateway.ModelOverride{"m": o})
		if asError(t, err, gateway.KindConfig); !strings.Contains(err.Error(), `[models."m"]`) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if s.ModelsCalls() != 0 {
		t.Error("the catalog was fetched despite an invalid override")
	}
}

func TestModelsStatusIsBoundedAndClassified(t *testing.T) {
	for _, tt := range []struct {
		code      int
		retryable bool
	}{{503, true}, {500, true}, {404, false}, {401, false}} {
		s := gatewaytest.New(t)
		s.SetModelsReply(gatewaytest.Status(tt.code, strings.Repeat("é", 3000)))
		_, err := newClient(t, s).Models(t.Context(), nil)
		ge := asError(t, err, gateway.KindStatus)
		if ge.Status != tt.code || ge.Retryable() != tt.retryable || len([]rune(ge.Body())) != 2000 {
			t.Errorf("%d: status %d retryable %v body %d chars", tt.code, ge.Status, ge.Retryable(), len([]rune(ge.Body())))
		}
		if strings.Contains(err.Error(), "é") || !strings.Contains(err.Error(), "for GET /models") {
			t.Errorf("%d: %q", tt.code, err)
		}
	}
}

func TestModelsOversizeBody(t *testing.T) {
	s := gatewaytest.New(t)
	s.SetModelsReply(gatewaytest.Malformed(`{"data":[` + strings.Repeat(" ", gateway.MaxReplyBytes) + `]}`))
	_, err := newClient(t, s).Models(t.Context(), nil)
	if asError(t, err, gateway.KindMalformed); !strings.Contains(err.Error(), "exceeds 16 MiB") {
		t.Errorf("got %v", err)
	}
}
