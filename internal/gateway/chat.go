package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
)

// Complete sends POST {base}/chat/completions and parses choices[0].
//
// The request is bounded by [Options.Timeout] and by ctx; when ctx ends first
// the error is KindCancelled and wraps ctx.Err(). For DialectGemma3 the
// client rewrites the request (tools described in a system message,
// tool-call history as text) and parses tool_code fences in the reply, so
// callers handle both dialects alike. On failure after the request was
// built, the *Error carries RequestJSON (and ResponseJSON when a body
// arrived) for debug capture.
func (c *Client) Complete(ctx context.Context, req ChatRequest) (*Completion, error) {
	if c.disabled != "" {
		return nil, c.disabledError(opChat)
	}
	if req.ThinkingSwitch == "" {
		req.ThinkingSwitch = c.switchDefault
	}
	body, cerr := encodeChat(req)
	if cerr != nil {
		return nil, cerr
	}
	if len(body) > c.maxRequest {
		return nil, configError(fmt.Sprintf(
			"chat request is %d bytes, over the %d-byte request limit; nothing was sent: send less (shorter prose blocks, fewer or smaller tool results) or raise [limits].max_request_size in prompts.toml",
			len(body), c.maxRequest))
	}
	status, resp, herr := c.do(ctx, "POST", PathChat, opChat, body, c.timeout)
	if herr == nil && (status < 200 || status > 299) {
		herr = statusError(opChat, status, resp, c.key.Reveal())
	}
	var comp *Completion
	if herr == nil {
		comp, herr = parseChat(resp, req)
	}
	if herr != nil {
		herr.RequestJSON, herr.ResponseJSON = body, resp
		herr.Usage = replyUsage(resp)
		return nil, herr
	}
	comp.RequestJSON, comp.ResponseJSON = body, resp
	return comp, nil
}

type wireRequest struct {
	Model              string          `json:"model"`
	Messages           []Message       `json:"messages"`
	Tools              []wireTool      `json:"tools,omitempty"`
	ToolChoice         string          `json:"tool_choice,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	MaxTokens          *int            `json:"max_tokens,omitempty"`
	ChatTemplateKwargs *templateKwargs `json:"chat_template_kwargs,omitempty"`
	ReasoningEffort    string          `json:"reasoning_effort,omitempty"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireToolFunc `json:"function"`
}

type wireToolFunc struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type templateKwargs struct {
	EnableThinking bool `json:"enable_thinking"`
}

// emptySchema is sent for a tool declared without parameters.
const emptySchema = `{"type":"object","properties":{}}`

// encodeChat validates req and builds the exact wire body.
func encodeChat(req ChatRequest) ([]byte, *Error) {
	if strings.TrimSpace(req.Model) == "" {
		return nil, configError("chat request has no model: bind a model before calling it")
	}
	if len(req.Messages) == 0 {
		return nil, configError("chat request has no messages: send at least one")
	}
	if req.MaxTokens != nil && *req.MaxTokens <= 0 {
		return nil, configError(fmt.Sprintf("chat request max_tokens is %d: use a positive number or leave it unset", *req.MaxTokens))
	}
	tools, err := checkTools(req.Tools)
	if err != nil {
		return nil, err
	}
	w := wireRequest{
		Model:       req.Model,
		Messages:    req.Messages,
		Temperature: req.Temperature,
		MaxTokens:   req.MaxTokens,
	}
	if req.Thinking != nil {
		switch req.ThinkingSwitch {
		case "", ThinkingSwitchTemplateKwargs:
			w.ChatTemplateKwargs = &templateKwargs{EnableThinking: *req.Thinking}
		case ThinkingSwitchReasoningEffort:
			// "none" is the off value Ollama maps to think=false;
			// "medium" is every server's default effort.
			w.ReasoningEffort = "none"
			if *req.Thinking {
				w.ReasoningEffort = "medium"
			}
		case ThinkingSwitchNone:
		default:
			return nil, configError(fmt.Sprintf("chat request thinking switch %q is unknown: use %q, %q or %q",
				req.ThinkingSwitch, ThinkingSwitchTemplateKwargs, ThinkingSwitchReasoningEffort, ThinkingSwitchNone))
		}
	}
	switch req.Dialect {
	case "", DialectOpenAI:
		if len(tools) > 0 {
			w.Tools = make([]wireTool, len(tools))
			for i, t := range tools {
				w.Tools[i] = wireTool{Type: "function", Function: wireToolFunc{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
			}
			w.ToolChoice = "auto"
		}
	case DialectGemma3:
		w.Messages = gemmaHistory(req.Messages)
		if len(tools) > 0 {
			w.Messages = withToolPrompt(w.Messages, gemmaToolPrompt(tools))
		}
	default:
		return nil, configError(fmt.Sprintf("chat request dialect %q is unknown: use %q or %q", req.Dialect, DialectOpenAI, DialectGemma3))
	}
	b, encErr := jsonwire.Marshal(w)
	if encErr != nil {
		return nil, configError("cannot encode the chat request: " + encErr.Error())
	}
	return b, nil
}

// checkTools validates tool specs and fills a nil schema. The returned
// slice is a copy when anything was filled.
func checkTools(tools []ToolSpec) ([]ToolSpec, *Error) {
	seen := make(map[string]bool, len(tools))
	out, copied := tools, false
	for i, t := range tools {
		if !validToolName(t.Name) {
			return nil, configError(fmt.Sprintf("tool %d name %q is not valid: tool names use only letters, digits, '_', '.' and '-'", i, t.Name))
		}
		if seen[t.Name] {
			return nil, configError(fmt.Sprintf("tool name %q is offered twice: give each tool a distinct alias", t.Name))
		}
		seen[t.Name] = true
		if len(t.Parameters) == 0 {
			if !copied {
				out, copied = append([]ToolSpec(nil), tools...), true
			}
			out[i].Parameters = json.RawMessage(emptySchema)
			continue
		}
		if jsonKind(t.Parameters) != '{' || !json.Valid(t.Parameters) {
			return nil, configError(fmt.Sprintf("tool %q parameters are not a JSON object: give a JSON Schema object", t.Name))
		}
	}
	return out, nil
}

func validToolName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '.' || b == '-') {
			return false
		}
	}
	return true
}

type wireCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// MarshalJSON writes the OpenAI wire shape, with the arguments as a
// compact JSON string (an empty Arguments is "{}").
func (tc ToolCall) MarshalJSON() ([]byte, error) {
	args := "{}"
	if len(tc.Arguments) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, tc.Arguments); err != nil {
			return nil, fmt.Errorf("tool call %q arguments are not valid JSON: %w", tc.ID, err)
		}
		args = buf.String()
	}
	return jsonwire.Marshal(wireCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}})
}

// UnmarshalJSON reads the OpenAI wire shape with the same checks as reply
// parsing: type "function" (or null or absent), a non-blank id and name,
// and arguments a string holding a JSON object (absent, null or "" mean
// {}).
func (tc *ToolCall) UnmarshalJSON(b []byte) error {
	call, problem := decodeWireCall(b)
	if problem != "" {
		return errors.New("tool call " + problem)
	}
	*tc = call
	return nil
}

func decodeWireCall(raw json.RawMessage) (ToolCall, string) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil || f == nil {
		return ToolCall{}, "is not an object"
	}
	// vLLM and Ollama builds have been reported to send a null or no
	// type; "function" is the only kind there is, so that is what it means.
	typ, present, ok := optString(f, "type")
	if !ok || present && typ != "function" {
		return ToolCall{}, `type is not "function"`
	}
	id, _, ok := optString(f, "id")
	if !ok || strings.TrimSpace(id) == "" {
		return ToolCall{}, "has no id"
	}
	var fn map[string]json.RawMessage
	if err := json.Unmarshal(f["function"], &fn); err != nil || fn == nil {
		return ToolCall{}, fmt.Sprintf("%q has no function object", id)
	}
	name, _, ok := optString(fn, "name")
	if !ok || strings.TrimSpace(name) == "" {
		return ToolCall{}, fmt.Sprintf("%q has no function name", id)
	}
	argStr, _, ok := optString(fn, "arguments")
	if !ok {
		return ToolCall{}, fmt.Sprintf("%q (%s) arguments are not a string", id, name)
	}
	// OpenRouter (Anthropic models) omits the arguments of a call without
	// parameters, and others send ""; both mean no arguments.
	if strings.TrimSpace(argStr) == "" {
		argStr = "{}"
	}
	args, good := compactObject([]byte(argStr))
	if !good {
		return ToolCall{}, fmt.Sprintf("%q (%s) arguments are not a JSON object", id, name)
	}
	return ToolCall{ID: id, Name: name, Arguments: args}, ""
}

// compactObject returns b compacted if it is exactly one JSON object.
func compactObject(b []byte) (json.RawMessage, bool) {
	if jsonKind(b) != '{' {
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// parseChat reads choices[0] of a 2xx reply (prompt-language §5.4).
func parseChat(body []byte, req ChatRequest) (*Completion, *Error) {
	bad := func(detail string) (*Completion, *Error) { return nil, malformed(opChat, 200, detail) }

	// One validation, then the members are read in place (scan.go).
	valid := json.Valid(body)
	top, err := rawObject(body, valid)
	if err != nil || top == nil {
		return bad("the body is not a JSON object")
	}
	rawChoices, ok := top["choices"]
	if !ok || jsonKind(rawChoices) != '[' {
		return bad("choices is missing or not an array")
	}
	choices, err := rawArray(rawChoices, valid)
	if err != nil {
		return bad("choices is not an array")
	}
	if len(choices) == 0 {
		return bad("choices is empty")
	}
	choice, err := rawObject(choices[0], valid)
	if err != nil || choice == nil {
		return bad("choices[0] is not an object")
	}
	msg, err := rawObject(choice["message"], valid)
	if err != nil || msg == nil {
		return bad("choices[0].message is missing or not an object")
	}
	finish, _, ok := optString(choice, "finish_reason")
	if !ok {
		return bad("choices[0].finish_reason is not a string")
	}
	var rawCalls []json.RawMessage
	if v, present := msg["tool_calls"]; present && jsonKind(v) != 'n' {
		if jsonKind(v) != '[' {
			return bad("choices[0].message.tool_calls is not an array")
		}
		if rawCalls, err = rawArray(v, valid); err != nil {
			return bad("choices[0].message.tool_calls is not an array")
		}
	}
	content, _, ok := optString(msg, "content")
	if !ok {
		return bad("choices[0].message.content is not a string")
	}
	refusal, _, ok := optString(msg, "refusal")
	if !ok {
		return bad("choices[0].message.refusal is not a string")
	}
	var reasoning string
	for _, key := range []string{"reasoning_content", "reasoning", "thinking"} {
		s, _, ok := optString(msg, key)
		if !ok {
			return bad("choices[0].message." + key + " is not a string")
		}
		if reasoning == "" && strings.TrimSpace(s) != "" {
			reasoning = s
		}
	}
	content, inline := splitThink(content)
	if reasoning == "" {
		reasoning = inline
	}

	comp := &Completion{FinishReason: finish, Reasoning: reasoning}
	comp.Usage = parseUsage(top["usage"])
	if len(rawCalls) > 0 {
		seen := make(map[string]bool, len(rawCalls))
		comp.ToolCalls = make([]ToolCall, len(rawCalls))
		for i, raw := range rawCalls {
			call, problem := decodeWireCall(raw)
			if problem != "" {
				return bad(fmt.Sprintf("tool_calls[%d] %s", i, problem))
			}
			if seen[call.ID] {
				return bad(fmt.Sprintf("tool call id %q is used twice in one reply", call.ID))
			}
			seen[call.ID] = true
			comp.ToolCalls[i] = call
		}
		return comp, nil
	}
	if req.Dialect == DialectGemma3 && len(req.Tools) > 0 {
		calls, recognised, problem := parseToolCode(content, req.Tools)
		if problem != "" {
			return bad(problem)
		}
		if recognised {
			comp.ToolCalls = calls
			return comp, nil
		}
	}
	if strings.TrimSpace(content) == "" {
		if strings.TrimSpace(refusal) != "" {
			return nil, refused(refusal)
		}
		return nil, emptyReply(finish, reasoning != "")
	}
	comp.Text = content
	return comp, nil
}

// splitThink separates an inline reasoning block from the answer: thinking
// models served without a reasoning parser (llama.cpp without
// --reasoning-format, raw Qwen3 or DeepSeek-R1 templates) put
// "<think>…</think>" at the start of content. The block is reasoning and
// the rest is the answer. An unclosed "<think>" means the reply stopped
// while reasoning (finish_reason "length"), so all of it is reasoning and
// there is no answer. Content that does not start with "<think>" is
// returned as it is.
func splitThink(content string) (answer, reasoning string) {
	const open, closing = "<think>", "</think>"
	rest, ok := strings.CutPrefix(strings.TrimLeft(content, " \t\r\n"), open)
	if !ok {
		return content, ""
	}
	inner, after, closed := strings.Cut(rest, closing)
	if !closed {
		return "", strings.TrimSpace(rest)
	}
	return strings.TrimLeft(after, " \t\r\n"), strings.TrimSpace(inner)
}
