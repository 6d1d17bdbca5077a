package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Gemma 3 has no tool-calling support in its chat template, so tools are
// described in a system message and the model answers with a
// ```tool_code fence holding Python-like calls. Everything about that
// dialect lives in this file so the engine never sees it: requests are
// rewritten in encodeChat, fences become ToolCalls in parseChat, and
// EchoToolResults (or gemmaHistory, for history in OpenAI shape) turns
// results back into plain messages.

// positionalAlias names the lone positional argument of the built-in
// tools, which small models often call as search("...").
func positionalAlias(tool string) string {
	switch tool {
	case "search", "web_search":
		return "query"
	case "fetch", "web_fetch":
		return "url"
	case "echo":
		return "value"
	}
	return ""
}

const gemmaResultsClosing = "Call another tool with a ```tool_code fence if you need more, or answer the original request using these results."

type toolParam struct {
	name     string
	required bool
	typ      string
}

// toolParams lists a schema's parameters sorted by name. A schema it cannot
// read yields none: the tool is still listed, just without parameters.
func toolParams(schema json.RawMessage) []toolParam {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	byName := make(map[string]*toolParam, len(s.Properties))
	for name, p := range s.Properties {
		typ, _ := p.Type.(string)
		byName[name] = &toolParam{name: name, typ: typ}
	}
	for _, name := range s.Required {
		if p, ok := byName[name]; ok {
			p.required = true
		} else {
			byName[name] = &toolParam{name: name, required: true}
		}
	}
	out := make([]toolParam, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out
}

// gemmaToolPrompt is the system message that replaces "tools".
func gemmaToolPrompt(tools []ToolSpec) string {
	var b strings.Builder
	b.WriteString("You can use the tools listed below. To call tools, reply with nothing but a ```tool_code fence " +
		"holding one call per line, written as name(key=<JSON value>, ...), for example key=\"text\", key=3, key=true. " +
		"Parameters marked ? are optional. The results come back in the next message; then call more tools or give your answer.\n\nTools:\n")
	for _, t := range tools {
		b.WriteString(t.Name)
		b.WriteByte('(')
		for i, p := range toolParams(t.Parameters) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p.name)
			b.WriteString("=...")
			if !p.required {
				b.WriteByte('?')
			}
		}
		b.WriteString(")")
		if d := strings.TrimSpace(t.Description); d != "" {
			b.WriteString(": ")
			b.WriteString(strings.Join(strings.Fields(d), " "))
		}
		b.WriteByte('\n')
	}
	first := tools[0]
	var args []string
	for _, p := range toolParams(first.Parameters) {
		if p.required {
			args = append(args, p.name+"="+examplePlaceholder(p.typ))
		}
	}
	b.WriteString("\nExample:\n```tool_code\n")
	b.WriteString(first.Name + "(" + strings.Join(args, ", ") + ")")
	b.WriteString("\n```")
	return b.String()
}

func examplePlaceholder(typ string) string {
	switch typ {
	case "integer", "number":
		return "1"
	case "boolean":
		return "true"
	case "array":
		return "[]"
	case "object":
		return "{}"
	}
	return `"..."`
}

// withToolPrompt puts the tool description first. Gemma 3's chat template
// accepts one leading system message and then strict user/assistant
// alternation, so an existing leading system message is extended instead
// of a second one being added.
func withToolPrompt(msgs []Message, prompt string) []Message {
	out := make([]Message, 0, len(msgs)+1)
	if len(msgs) > 0 && msgs[0].Role == "system" {
		first := msgs[0]
		first.Content = prompt + "\n\n" + first.Content
		return append(append(out, first), msgs[1:]...)
	}
	out = append(out, Message{Role: "system", Content: prompt})
	return append(out, msgs...)
}

// EchoToolResults is the history a dialect expects after the model's tool
// calls were dispatched: results[i] answers calls[i] (a missing result is
// sent as ""). OpenAI: the assistant tool-call message, then one tool
// message per call in call order. Gemma 3: an assistant message holding
// the re-rendered tool_code fence, then one user message with a
// "TOOL RESULT <name> (<id>):" block per call. Any other dialect gets the
// OpenAI shape.
func EchoToolResults(d Dialect, calls []ToolCall, results []string) []Message {
	result := func(i int) string {
		if i < len(results) {
			return results[i]
		}
		return ""
	}
	if d == DialectGemma3 {
		out := []Message{{Role: "assistant", Content: renderFence(calls)}}
		blocks := make([]string, len(calls))
		for i, c := range calls {
			blocks[i] = toolResultBlock(c.Name, c.ID, result(i))
		}
		return append(out, Message{Role: "user", Content: toolResultsText(blocks)})
	}
	out := make([]Message, 0, len(calls)+1)
	out = append(out, Message{Role: "assistant", Content: "", ToolCalls: slices.Clone(calls)})
	for i, c := range calls {
		out = append(out, Message{Role: "tool", Content: result(i), ToolCallID: c.ID})
	}
	return out
}

func toolResultBlock(name, id, result string) string {
	return "TOOL RESULT " + name + " (" + id + "):\n" + result
}

func toolResultsText(blocks []string) string {
	return strings.Join(blocks, "\n\n") + "\n\n" + gemmaResultsClosing
}

// gemmaHistory rewrites tool-call history in OpenAI shape (assistant
// tool_calls, role "tool") into the Gemma 3 text form, so a caller that
// always echoes the OpenAI way still talks to a Gemma model correctly.
// Messages already in text form pass through.
func gemmaHistory(msgs []Message) []Message {
	if !slices.ContainsFunc(msgs, func(m Message) bool { return len(m.ToolCalls) > 0 || m.Role == "tool" }) {
		return msgs
	}
	names := make(map[string]string)
	out := make([]Message, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
			}
			out = append(out, Message{Role: m.Role, Content: renderFence(m.ToolCalls)})
		case m.Role == "tool":
			var blocks []string
			for ; i < len(msgs) && msgs[i].Role == "tool"; i++ {
				t := msgs[i]
				name := names[t.ToolCallID]
				if name == "" {
					name = "tool"
				}
				blocks = append(blocks, toolResultBlock(name, t.ToolCallID, t.Content))
			}
			i--
			out = append(out, Message{Role: "user", Content: toolResultsText(blocks)})
		default:
			out = append(out, m)
		}
	}
	return out
}

// renderFence writes calls as the tool_code fence the model would have
// produced, keeping each call's argument order.
func renderFence(calls []ToolCall) string {
	var b strings.Builder
	b.WriteString("```tool_code\n")
	for _, c := range calls {
		b.WriteString(c.Name)
		b.WriteByte('(')
		for i, m := range objectMembers(c.Arguments) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(m.key)
			b.WriteByte('=')
			b.Write(m.value)
		}
		b.WriteString(")\n")
	}
	b.WriteString("```")
	return b.String()
}

type member struct {
	key   string
	value json.RawMessage
}

// objectMembers lists a JSON object's members in document order, values
// compacted; anything that is not an object yields none.
func objectMembers(obj json.RawMessage) []member {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		var buf bytes.Buffer
		if json.Compact(&buf, v) != nil {
			return out
		}
		out = append(out, member{key: key, value: buf.Bytes()})
	}
	return out
}

const gemmaSpace = " \t\r\n"

// parseToolCode turns a reply that starts with a ```tool_code fence, or a
// ```json fence holding OpenAI-style "tool_calls", into tool calls with
// ids call_tool_code_<n>, counted from 0 across the reply. recognised is
// false for any other content (it is then ordinary text); problem is set
// for a recognised reply that cannot be parsed.
func parseToolCode(content string, tools []ToolSpec) (calls []ToolCall, recognised bool, problem string) {
	rest, ok := strings.CutPrefix(strings.TrimLeft(content, gemmaSpace), "```")
	if !ok {
		return nil, false, ""
	}
	info, body, _ := strings.Cut(rest, "\n")
	switch strings.TrimSpace(info) {
	case "tool_code":
		calls, problem = parseToolCodeFences(strings.TrimLeft(content, gemmaSpace), tools)
		return calls, true, problem
	case "json":
		body, _, _ = cutFence(body)
		return parseJSONCalls(body)
	}
	return nil, false, ""
}

// parseToolCodeFences reads a reply that is nothing but ```tool_code
// fences (whitespace between them), as the reference does: every fence's
// calls, in order. A fence that is not closed (a reply cut short), or any
// other text after a fence, makes the whole reply malformed rather than a
// guess at what the model meant: the engine then asks again or fails,
// where acting on half a reply would run tools the model did not settle on.
func parseToolCodeFences(s string, tools []ToolSpec) ([]ToolCall, string) {
	var calls []ToolCall
	for fence := 1; s != ""; fence++ {
		rest, ok := strings.CutPrefix(s, "```")
		info, body, _ := strings.Cut(rest, "\n")
		if !ok || strings.TrimSpace(info) != "tool_code" {
			return nil, "text follows the tool_code fence; a reply that calls tools must hold nothing but ```tool_code fences"
		}
		inner, after, closed := cutFence(body)
		if !closed {
			return nil, fmt.Sprintf("tool_code fence %d is not closed with a ``` line", fence)
		}
		more, problem := parseCallLines(inner, tools, len(calls))
		if problem != "" {
			return nil, problem
		}
		calls = append(calls, more...)
		s = strings.TrimLeft(after, gemmaSpace)
	}
	return calls, ""
}

// cutFence cuts body (what follows a fence's info line) at its closing
// line, a line that is ``` alone, and returns what the fence holds and
// what follows it. closed is false when no such line comes first: the
// body ends, or another fence opens inside it.
func cutFence(body string) (inner, after string, closed bool) {
	off := 0
	for line := range strings.Lines(body) {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
			if t != "```" {
				return body, "", false
			}
			return body[:off], body[off+len(line):], true
		}
		off += len(line)
	}
	return body, "", false
}

func syntheticID(n int) string { return "call_tool_code_" + strconv.Itoa(n) }

// parseCallLines reads one fence's calls; their ids count on from first,
// the number of calls earlier fences of the reply held.
func parseCallLines(body string, tools []ToolSpec, first int) ([]ToolCall, string) {
	var calls []ToolCall
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		call, problem := parseCall(line, tools)
		if problem != "" {
			return nil, fmt.Sprintf("tool_code line %q: %s", line, problem)
		}
		call.ID = syntheticID(first + len(calls))
		calls = append(calls, call)
	}
	if len(calls) == 0 {
		return nil, "the tool_code fence holds no call"
	}
	return calls, ""
}

// parseCall reads name(key=<json>, ...) or name(<json>, ...). The name
// must be an identifier, as in the Python the dialect imitates: anything
// else ("web-search", "a.b") is a reply the model got wrong, not a call
// to a tool it was not offered.
func parseCall(line string, tools []ToolSpec) (ToolCall, string) {
	name, rest, ok := strings.Cut(line, "(")
	name = strings.TrimSpace(name)
	if !ok {
		return ToolCall{}, "expected name(arguments)"
	}
	if !isIdentifier(name) {
		return ToolCall{}, fmt.Sprintf("the tool name %q is not an identifier (letters, digits and _, not starting with a digit)", name)
	}
	var keys []string
	var values []json.RawMessage
	positional := 0
	p := 0
	for {
		p = skipSpace(rest, p)
		if p >= len(rest) {
			return ToolCall{}, "the call is not closed with )"
		}
		if rest[p] == ')' {
			p++
			break
		}
		if len(values) > 0 {
			if rest[p] != ',' {
				return ToolCall{}, "expected , or ) between arguments"
			}
			p = skipSpace(rest, p+1)
			if p < len(rest) && rest[p] == ')' {
				p++
				break
			}
		}
		key, after := keyword(rest, p)
		if key == "" {
			positional++
		} else {
			if slices.Contains(keys, key) {
				return ToolCall{}, fmt.Sprintf("argument %q is given twice", key)
			}
			p = after
		}
		v, n, problem := parseValue(rest[p:])
		if problem != "" {
			return ToolCall{}, problem
		}
		p += n
		keys = append(keys, key)
		values = append(values, v)
	}
	if strings.TrimSpace(rest[p:]) != "" {
		return ToolCall{}, "unexpected text after the call"
	}
	switch {
	case positional > 0 && positional < len(values):
		return ToolCall{}, "mixes keyword and positional arguments; name every argument"
	case positional > 1:
		return ToolCall{}, "has several positional arguments; name them as key=value"
	case positional == 1:
		// The tool's own schema is the better guide; the alias table
		// covers the built-ins when it cannot decide.
		key := soleParam(name, tools)
		if key == "" {
			key = positionalAlias(name)
		}
		if key == "" {
			return ToolCall{}, "has a positional argument; name it as key=value"
		}
		keys[0] = key
	}
	var obj bytes.Buffer
	obj.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			obj.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		obj.Write(kb)
		obj.WriteByte(':')
		obj.Write(values[i])
	}
	obj.WriteByte('}')
	return ToolCall{Name: name, Arguments: obj.Bytes()}, ""
}

// soleParam is the only parameter of the named tool, if it has exactly one.
func soleParam(name string, tools []ToolSpec) string {
	for _, t := range tools {
		if t.Name == name {
			if ps := toolParams(t.Parameters); len(ps) == 1 {
				return ps[0].name
			}
			return ""
		}
	}
	return ""
}

func skipSpace(s string, p int) int {
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	return p
}

func isIdentifier(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i], i == 0) {
			return false
		}
	}
	return s != ""
}

func isIdentByte(b byte, first bool) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || !first && b >= '0' && b <= '9'
}

// keyword reads "ident =" at p and returns the identifier and the offset
// after '='; "" when p does not start a keyword argument.
func keyword(s string, p int) (string, int) {
	start := p
	for p < len(s) && isIdentByte(s[p], p == start) {
		p++
	}
	if p == start {
		return "", start
	}
	key := s[start:p]
	p = skipSpace(s, p)
	if p >= len(s) || s[p] != '=' || p+1 < len(s) && s[p+1] == '=' {
		return "", start
	}
	return key, p + 1
}

// parseValue reads one JSON value at the start of s (after spaces), also
// accepting the Python spellings True, False, None and 'single-quoted'
// strings that models trained on Python emit. It returns the compact JSON
// and the bytes consumed.
func parseValue(s string) (json.RawMessage, int, string) {
	p := skipSpace(s, 0)
	if p >= len(s) {
		return nil, 0, "an argument has no value"
	}
	for _, w := range [...][2]string{{"True", "true"}, {"False", "false"}, {"None", "null"}} {
		word, js := w[0], w[1]
		if strings.HasPrefix(s[p:], word) && (p+len(word) == len(s) || !isIdentByte(s[p+len(word)], false)) {
			return json.RawMessage(js), p + len(word), ""
		}
	}
	if s[p] == '\'' {
		return pythonString(s, p)
	}
	dec := json.NewDecoder(strings.NewReader(s[p:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, 0, "an argument value is not JSON"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil, 0, "an argument value is not JSON"
	}
	return buf.Bytes(), p + int(dec.InputOffset()), ""
}

func pythonString(s string, p int) (json.RawMessage, int, string) {
	var b strings.Builder
	for i := p + 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(s[i])
				}
			}
		case '\'':
			out, _ := json.Marshal(b.String())
			return out, i + 1, ""
		default:
			b.WriteByte(c)
		}
	}
	return nil, 0, "a quoted argument is not closed"
}

// parseJSONCalls reads a ```json fence. Only an object with a "tool_calls"
// key is a tool-call turn; any other JSON is the model's text answer.
func parseJSONCalls(body string) ([]ToolCall, bool, string) {
	var blob map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &blob) != nil {
		return nil, false, ""
	}
	raw, ok := blob["tool_calls"]
	if !ok {
		return nil, false, ""
	}
	var items []json.RawMessage
	if jsonKind(raw) != '[' || json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, true, "the json fence's tool_calls is not a non-empty array"
	}
	calls := make([]ToolCall, len(items))
	for i, item := range items {
		var f map[string]json.RawMessage
		if json.Unmarshal(item, &f) != nil || f == nil {
			return nil, true, fmt.Sprintf("the json fence's tool_calls[%d] is not an object", i)
		}
		if fn, ok := f["function"]; ok {
			f = nil
			if json.Unmarshal(fn, &f) != nil || f == nil {
				return nil, true, fmt.Sprintf("the json fence's tool_calls[%d].function is not an object", i)
			}
		}
		name, _, ok := optString(f, "name")
		if !ok || !validToolName(name) {
			return nil, true, fmt.Sprintf("the json fence's tool_calls[%d] has no valid name", i)
		}
		args := f["arguments"]
		if jsonKind(args) == '"' {
			var s string
			_ = json.Unmarshal(args, &s)
			args = json.RawMessage(s)
		} else if len(args) == 0 || jsonKind(args) == 'n' {
			args = json.RawMessage("{}")
		}
		obj, ok := compactObject(args)
		if !ok {
			return nil, true, fmt.Sprintf("the json fence's tool_calls[%d] (%s) arguments are not a JSON object", i, name)
		}
		calls[i] = ToolCall{ID: syntheticID(i), Name: name, Arguments: obj}
	}
	return calls, true, ""
}
