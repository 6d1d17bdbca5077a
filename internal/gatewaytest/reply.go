package gatewaytest

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// A Reply is one scripted answer. Replies are built (and their bodies
// marshalled) when the test constructs them, so serving one costs a write,
// which keeps the server cheap enough for benchmarks.
type Reply struct {
	status int
	body   []byte
	// echoAt >= 0 marks where the request's model (chat) or query (search)
	// is spliced into body as a JSON string, the way a real gateway echoes
	// them; -1 means body is sent as is.
	echoAt int
	hang   bool
	gate   *Gate
	next   *Reply
	// chat keeps the parts of a chat reply so modifiers can rebuild body.
	chat *chatReply
}

// Call is one tool call in a scripted reply. Args becomes the call's
// "arguments" string: nil sends "{}", a string or json.RawMessage is sent
// verbatim (so a test can send malformed arguments), anything else is
// marshalled. An empty ID becomes "call_<n>" (n counting from 1 within
// the reply).
type Call struct {
	ID   string
	Name string
	Args any
}

// SearchHit is one web_search result.
type SearchHit struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	Description string `json:"description"`
}

type chatReply struct {
	content   *string
	calls     []wireCall
	finish    string
	reasoning string
	usage     usage
}

// usage is the reply's "usage" object, in the key order OpenAI writes it.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
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

// Text is a text reply with finish_reason "stop".
func Text(s string) Reply { return TextFinish(s, "stop") }

// TextFinish is a text reply with the given finish_reason; "" sends null.
func TextFinish(s, finish string) Reply {
	return buildChat(&chatReply{content: &s, finish: finish})
}

// Empty is a reply with empty content and no tool calls.
func Empty(finish string) Reply {
	empty := ""
	return buildChat(&chatReply{content: &empty, finish: finish})
}

// Calls is a tool-call reply with finish_reason "tool_calls" and null
// content.
func Calls(calls ...Call) Reply {
	wire := make([]wireCall, len(calls))
	for i, c := range calls {
		id := c.ID
		if id == "" {
			id = "call_" + strconv.Itoa(i+1)
		}
		wire[i] = wireCall{ID: id, Type: "function", Function: wireFunction{Name: c.Name, Arguments: argsString(c.Args)}}
	}
	return buildChat(&chatReply{calls: wire, finish: "tool_calls"})
}

// WithReasoning returns r with message.reasoning_content set, as reasoning
// backends send it. It only applies to chat replies (Text, TextFinish,
// Empty, Calls); other replies are returned unchanged.
func (r Reply) WithReasoning(reasoning string) Reply {
	if r.chat == nil {
		return r
	}
	c := *r.chat
	c.reasoning = reasoning
	return buildChat(&c)
}

// WithUsage returns r with its "usage" object reporting prompt and
// completion tokens (total_tokens is their sum); replies are built with
// zeros otherwise. It only applies to chat replies; other replies are
// returned unchanged.
func (r Reply) WithUsage(prompt, completion int) Reply {
	if r.chat == nil {
		return r
	}
	c := *r.chat
	c.usage = usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return buildChat(&c)
}

// Status answers with the given HTTP status and raw body.
func Status(code int, body string) Reply {
	return Reply{status: code, body: []byte(body), echoAt: -1}
}

// Malformed answers 200 with this raw body.
func Malformed(body string) Reply { return Status(200, body) }

// JSON answers 200 with v marshalled; it panics if v cannot be marshalled,
// since that is a mistake in the test itself.
func JSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("gatewaytest.JSON: cannot marshal the reply: %v", err))
	}
	return Reply{status: 200, body: b, echoAt: -1}
}

// Hang never answers: the handler holds the request until the client goes
// away or the server closes, then drops the connection.
func Hang() Reply { return Reply{hang: true, echoAt: -1} }

// Gated holds the request at g until g.Release (or until the client goes
// away), then answers r.
func Gated(g *Gate, r Reply) Reply {
	return Reply{gate: g, next: &r, echoAt: -1}
}

// Search is a web_search reply: {"query":<the request's query>,"results":[...]}.
func Search(hits ...SearchHit) Reply {
	if hits == nil {
		hits = []SearchHit{}
	}
	results, err := json.Marshal(hits)
	if err != nil {
		panic(fmt.Sprintf("gatewaytest.Search: cannot marshal hits: %v", err))
	}
	head := []byte(`{"query":`)
	body := append(append(head, `,"results":`...), results...)
	body = append(body, '}')
	return Reply{status: 200, body: body, echoAt: len(head)}
}

func argsString(args any) string {
	switch a := args.(type) {
	case nil:
		return "{}"
	case string:
		return a
	case json.RawMessage:
		return string(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			panic(fmt.Sprintf("gatewaytest.Calls: cannot marshal Args: %v", err))
		}
		return string(b)
	}
}

func buildChat(c *chatReply) Reply {
	type message struct {
		Role             string     `json:"role"`
		Content          *string    `json:"content"`
		ToolCalls        []wireCall `json:"tool_calls,omitempty"`
		ReasoningContent string     `json:"reasoning_content,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason *string `json:"finish_reason"`
	}
	ch := choice{Message: message{Role: "assistant", Content: c.content, ToolCalls: c.calls, ReasoningContent: c.reasoning}}
	if c.finish != "" {
		ch.FinishReason = &c.finish
	}
	choices, err := json.Marshal([]choice{ch})
	if err != nil {
		panic(fmt.Sprintf("gatewaytest: cannot marshal a chat reply: %v", err))
	}
	u, err := json.Marshal(c.usage)
	if err != nil {
		panic(fmt.Sprintf("gatewaytest: cannot marshal a reply's usage: %v", err))
	}
	head := []byte(`{"id":"chatcmpl-gatewaytest","object":"chat.completion","created":0,"model":`)
	body := append(append(head, `,"choices":`...), choices...)
	body = append(append(append(body, `,"usage":`...), u...), '}')
	return Reply{status: 200, body: body, echoAt: len(head), chat: c}
}
