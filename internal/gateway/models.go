package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// Models fetches GET {base}/models and merges overrides over it.
//
// The decoder is stricter than a plain OpenAI list needs only about what
// is present: a field with the wrong type or value (context 0, an unknown
// thinking mode, a tools_mode that contradicts tool_dialect), an entry
// without a valid id, or a duplicate id makes the whole catalog malformed.
// Missing description, context or thinking are not faults (design §3.3):
// an override fills them, and an entry that is still incomplete is listed
// in Skipped with what to add. Overrides win over served values. An
// override for an id the gateway does not serve has no effect and is also
// listed in Skipped, so a typo in prompts.toml is visible at boot.
//
// The request is bounded by [Options.ModelsTimeout] and by ctx.
func (c *Client) Models(ctx context.Context, overrides map[string]ModelOverride) (Catalog, error) {
	if c.disabled != "" {
		return Catalog{}, c.disabledError(opModels)
	}
	if err := checkOverrides(overrides); err != nil {
		return Catalog{}, err
	}
	status, body, herr := c.do(ctx, "GET", PathModels, opModels, nil, c.modelsTimeout)
	if herr != nil {
		return Catalog{}, herr
	}
	if status < 200 || status > 299 {
		return Catalog{}, statusError(opModels, status, body)
	}
	served, problem := decodeCatalog(body)
	if problem != "" {
		return Catalog{}, malformed(opModels, status, problem)
	}
	return mergeCatalog(served, overrides), nil
}

func checkOverrides(overrides map[string]ModelOverride) error {
	for _, id := range slices.Sorted(maps.Keys(overrides)) {
		o := overrides[id]
		if o.Thinking != "" && !validThinking(o.Thinking) {
			return configError(fmt.Sprintf("[models.%s] thinking = %q is not valid: use \"never\", \"always\" or \"switchable\"", tomlKey(id), o.Thinking))
		}
		if o.Dialect != "" && o.Dialect != DialectOpenAI && o.Dialect != DialectGemma3 {
			return configError(fmt.Sprintf("[models.%s] tool_dialect = %q is not valid: use \"openai\" or \"gemma3_tool_code\"", tomlKey(id), o.Dialect))
		}
	}
	return nil
}

func validThinking(t Thinking) bool {
	return t == ThinkingNever || t == ThinkingAlways || t == ThinkingSwitchable
}

// decodeCatalog decodes {data:[...]} and returns what is wrong, or "".
// Zero fields in the result were absent or null.
func decodeCatalog(body []byte) ([]Model, string) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, "the body is not a JSON object"
	}
	data, ok := top["data"]
	if !ok || jsonKind(data) != '[' {
		return nil, "the body has no data array"
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, "data is not an array"
	}
	out := make([]Model, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for i, raw := range entries {
		m, problem := decodeEntry(raw)
		if problem != "" {
			if m.ID != "" {
				return nil, fmt.Sprintf("model %q: %s", m.ID, problem)
			}
			return nil, fmt.Sprintf("data[%d]: %s", i, problem)
		}
		if seen[m.ID] {
			return nil, fmt.Sprintf("model id %q is listed twice", m.ID)
		}
		seen[m.ID] = true
		out = append(out, m)
	}
	return out, ""
}

func decodeEntry(raw json.RawMessage) (Model, string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return Model{}, "the entry is not an object"
	}
	var m Model
	id, present, ok := optString(fields, "id")
	if !present || !ok {
		return m, "id is missing or not a string"
	}
	if problem := checkModelID(id); problem != "" {
		return m, fmt.Sprintf("id %q %s", id, problem)
	}
	m.ID = id

	desc, _, ok := optString(fields, "description")
	if !ok {
		return m, "description is not a string"
	}
	m.Description = strings.TrimSpace(desc)

	if v, present := fields["context"]; present && jsonKind(v) != 'n' {
		var n uint32
		if err := json.Unmarshal(v, &n); err != nil {
			return m, "context is not a whole number of tokens that fits in 32 bits"
		}
		if n == 0 {
			return m, "context is 0; a context window must be positive"
		}
		m.Context = n
	}

	thinking, _, ok := optString(fields, "thinking")
	if !ok || thinking != "" && !validThinking(Thinking(thinking)) {
		return m, `thinking must be "never", "always" or "switchable"`
	}
	m.Thinking = Thinking(thinking)

	dialect, _, ok := optString(fields, "tool_dialect")
	switch {
	case !ok:
		return m, "tool_dialect is not a string"
	case dialect == "":
		m.Dialect = DialectOpenAI
	case dialect == string(DialectOpenAI) || dialect == string(DialectGemma3):
		m.Dialect = Dialect(dialect)
	default:
		return m, fmt.Sprintf(`tool_dialect %q is not "openai" or "gemma3_tool_code"`, dialect)
	}

	mode, present, ok := optString(fields, "tools_mode")
	if !ok {
		return m, "tools_mode is not a string"
	}
	if present {
		want := "native"
		if m.Dialect == DialectGemma3 {
			want = "emulated"
		}
		if mode != want {
			return m, fmt.Sprintf("tools_mode %q contradicts tool_dialect %q (which means %q)", mode, m.Dialect, want)
		}
	}
	return m, ""
}

// optString reads an optional string field: present reports a non-null
// value, ok is false when that value is not a string.
func optString(fields map[string]json.RawMessage, key string) (s string, present, ok bool) {
	v, found := fields[key]
	if !found || jsonKind(v) == 'n' {
		return "", false, true
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return "", true, false
	}
	return s, true, true
}

// checkModelID enforces what a catalog id may hold: it names the model on
// the wire and in logs, and U+001E is the reference's record separator.
func checkModelID(id string) string {
	if strings.TrimSpace(id) == "" {
		return "is blank"
	}
	for _, r := range id {
		if unicode.IsControl(r) || r == '\u001e' {
			return "contains a control character"
		}
	}
	return ""
}

// jsonKind is the first byte of a JSON value ('{', '[', '"', 'n' for null,
// 't'/'f', or a digit/'-'); 0 for empty input.
func jsonKind(v []byte) byte {
	for _, b := range v {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b
	}
	return 0
}

func mergeCatalog(served []Model, overrides map[string]ModelOverride) Catalog {
	cat := Catalog{Models: make([]Model, 0, len(served))}
	servedIDs := make(map[string]bool, len(served))
	for _, s := range served {
		m := s
		servedIDs[m.ID] = true
		if o, ok := overrides[m.ID]; ok {
			if d := strings.TrimSpace(o.Description); d != "" {
				m.Description = d
			}
			if o.Context != 0 {
				m.Context = o.Context
			}
			if o.Thinking != "" {
				m.Thinking = o.Thinking
			}
			if o.Dialect != "" {
				m.Dialect = o.Dialect
			}
		}
		if reason := incomplete(m); reason != "" {
			cat.Skipped = append(cat.Skipped, SkippedModel{ID: m.ID, Reason: reason})
			continue
		}
		cat.Models = append(cat.Models, m)
	}
	for _, id := range slices.Sorted(maps.Keys(overrides)) {
		if !servedIDs[id] {
			cat.Skipped = append(cat.Skipped, SkippedModel{ID: id, Reason: fmt.Sprintf(
				"not served by the gateway: [models.%s] has no effect; check the id against the gateway's /models list", tomlKey(id))})
		}
	}
	return cat
}

// incomplete says what an entry lacks and what to add to prompts.toml.
func incomplete(m Model) string {
	var missing, add []string
	if m.Description == "" {
		missing = append(missing, "description")
		add = append(add, `description = "..."`)
	}
	if m.Context == 0 {
		missing = append(missing, "context")
		add = append(add, "context = <tokens>")
	}
	if m.Thinking == "" {
		missing = append(missing, "thinking")
		add = append(add, `thinking = "never"|"always"|"switchable"`)
	}
	if len(missing) == 0 {
		return ""
	}
	what := missing[0]
	if n := len(missing); n > 1 {
		what = strings.Join(missing[:n-1], ", ") + " or " + missing[n-1]
	}
	return fmt.Sprintf("no %s: add [models.%s] %s", what, tomlKey(m.ID), strings.Join(add, ", "))
}

// tomlKey quotes a model id as a TOML basic-string key.
func tomlKey(id string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(id) + `"`
}
