package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
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
// override for an id the gateway does not serve has no effect and is
// listed in Unmatched with the served id it most likely means, so a typo
// or a wrong tag in prompts.toml is visible at boot.
//
// A data array that is empty or null (a fresh Ollama with nothing pulled)
// is an empty catalog, not an error. A context window the reference
// gateway's "context" does not give is read from what other servers
// publish: vLLM's max_model_len, llama.cpp's meta.n_ctx, or
// context_length (LiteLLM, OpenRouter); those foreign keys are read when
// they hold a positive whole number and ignored otherwise, since they are
// not this contract's.
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
		return Catalog{}, statusError(opModels, status, body, c.key.Reveal())
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
		if o.ThinkingSwitch != "" && !o.ThinkingSwitch.Valid() {
			return configError(fmt.Sprintf("[models.%s] thinking_switch = %q is not valid: use %q, %q or %q", tomlKey(id), o.ThinkingSwitch,
				ThinkingSwitchTemplateKwargs, ThinkingSwitchReasoningEffort, ThinkingSwitchNone))
		}
	}
	return nil
}

func validThinking(t Thinking) bool {
	return t == ThinkingNever || t == ThinkingAlways || t == ThinkingSwitchable
}

// decodeCatalog decodes {data:[...]} and returns what is wrong, or "".
// Zero fields in the result were absent or null. "data": null is an empty
// list: Ollama sends it when no model is pulled.
func decodeCatalog(body []byte) ([]Model, string) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, "the body is not a JSON object"
	}
	data, ok := top["data"]
	if ok && jsonKind(data) == 'n' {
		return []Model{}, ""
	}
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
	} else {
		m.Context = publishedContext(fields)
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

// publishedContext is the context window other servers publish under
// their own keys, or 0: vLLM's max_model_len, llama.cpp's meta.n_ctx (the
// slot size the server runs with, not n_ctx_train), and context_length
// (LiteLLM, OpenRouter).
func publishedContext(fields map[string]json.RawMessage) uint32 {
	for _, path := range [][]string{{"max_model_len"}, {"meta", "n_ctx"}, {"context_length"}} {
		v, ok := fields[path[0]]
		for _, key := range path[1:] {
			var inner map[string]json.RawMessage
			if !ok || json.Unmarshal(v, &inner) != nil {
				ok = false
				break
			}
			v, ok = inner[key]
		}
		var n uint32
		if ok && json.Unmarshal(v, &n) == nil && n > 0 {
			return n
		}
	}
	return 0
}

// optString reads an optional string field: present reports a non-null
// value, ok is false when that value is not a string.
func optString(fields map[string]json.RawMessage, key string) (s string, present, ok bool) {
	v, found := fields[key]
	if !found || jsonKind(v) == 'n' {
		return "", false, true
	}
	// Fields hold valid JSON (they come from a decoded object), so a plain
	// string is read in place (scan.go).
	if s, ok := plainString(v); ok {
		return s, true, true
	}
	// A variable of its own: decoding into the result would move the
	// result to the heap on every call, the plain and absent ones too.
	var decoded string
	if err := json.Unmarshal(v, &decoded); err != nil {
		return "", true, false
	}
	return decoded, true, true
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
			m.ThinkingSwitch = o.ThinkingSwitch
		}
		if reason := incomplete(m); reason != "" {
			cat.Skipped = append(cat.Skipped, SkippedModel{ID: m.ID, Reason: reason})
			continue
		}
		cat.Models = append(cat.Models, m)
	}
	for _, id := range slices.Sorted(maps.Keys(overrides)) {
		if !servedIDs[id] {
			cat.Unmatched = append(cat.Unmatched, UnmatchedOverride{ID: id, Closest: closestID(id, served, overrides)})
		}
	}
	return cat
}

// closestID is the served id an unmatched override most likely means: the
// first with the same name before ':' (Ollama's tags: "llama3.1:8b"
// configured, "llama3.1:latest" served), else the nearest by edit
// distance, ignoring case, when at most a third of the longer id differs.
// Served ids that have their own override are not suggested: renaming onto
// them would clash. "" when nothing is close.
func closestID(id string, served []Model, overrides map[string]ModelOverride) string {
	base := func(s string) string {
		b, _, _ := strings.Cut(strings.ToLower(s), ":")
		return b
	}
	var free []string
	for _, m := range served {
		if _, taken := overrides[m.ID]; !taken {
			free = append(free, m.ID)
		}
	}
	for _, s := range free {
		if base(s) == base(id) {
			return s
		}
	}
	best, bestDist := "", 0
	for _, s := range free {
		d := editDistance([]rune(strings.ToLower(id)), []rune(strings.ToLower(s)))
		if d*3 <= max(utf8.RuneCountInString(id), utf8.RuneCountInString(s)) && (best == "" || d < bestDist) {
			best, bestDist = s, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
