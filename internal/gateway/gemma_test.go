package gateway_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

var gemmaTools = []gateway.ToolSpec{
	{Name: "search", Description: "Search the web.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"query":{"type":"string"},"count":{"type":"integer"}},"required":["query"]}`)},
	{Name: "fetch", Description: "Fetch a page\nas markdown.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
	{Name: "lookup", Description: "Look up a key.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"key":{"type":"string"}}}`)},
	{Name: "pair", Description: "Two params.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"a":{},"b":{}}}`)},
}

func gemmaTurn(content string) gateway.ChatRequest {
	return gateway.ChatRequest{
		Model: "gemma", Dialect: gateway.DialectGemma3, Tools: gemmaTools,
		Messages: []gateway.Message{{Role: "user", Content: content}},
	}
}

func TestGemmaRequestRewrite(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("ok"), gatewaytest.Text("ok"))
	c := newClient(t, s)
	if _, err := c.Complete(t.Context(), gemmaTurn("hi")); err != nil {
		t.Fatal(err)
	}
	got := s.Requests()[0]
	if _, ok := got.Body["tools"]; ok {
		t.Error("gemma request still has tools")
	}
	if _, ok := got.Body["tool_choice"]; ok {
		t.Error("gemma request still has tool_choice")
	}
	if len(got.Messages) != 2 || got.Messages[0]["role"] != "system" || got.Messages[1]["content"] != "hi" {
		t.Fatalf("messages = %v", got.Messages)
	}
	sys := got.Messages[0]["content"].(string)
	for _, want := range []string{
		"```tool_code",
		"search(count=...?, query=...): Search the web.\n",
		"fetch(url=...): Fetch a page as markdown.\n",
		"lookup(key=...?): Look up a key.\n",
		"Example:\n```tool_code\nsearch(query=\"...\")\n```",
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}

	// An existing leading system message is extended, not doubled:
	// Gemma's template allows only one.
	withSys := gemmaTurn("hi")
	withSys.Messages = append([]gateway.Message{{Role: "system", Content: "Be terse."}}, withSys.Messages...)
	s.Enqueue(gatewaytest.Text("ok"))
	if _, err := c.Complete(t.Context(), withSys); err != nil {
		t.Fatal(err)
	}
	msgs := s.Requests()[1].Messages
	if len(msgs) != 2 || msgs[0]["role"] != "system" || !strings.HasSuffix(msgs[0]["content"].(string), "```\n\nBe terse.") ||
		!strings.HasPrefix(msgs[0]["content"].(string), sys[:40]) {
		t.Errorf("system message merge: %v", msgs)
	}

	// Without tools, nothing is added.
	req := gemmaTurn("plain")
	req.Tools = nil
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := string(s.Requests()[2].Raw); got != `{"model":"gemma","messages":[{"role":"user","content":"plain"}]}` {
		t.Errorf("gemma without tools: %s", got)
	}
}

func TestGemmaToolCodeParsing(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []gateway.ToolCall
	}{
		{"keywords", "```tool_code\nsearch(query=\"go generics\", count=3)\n```", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "search", Arguments: json.RawMessage(`{"query":"go generics","count":3}`)}}},
		{"several lines and leading space", "\n  ```tool_code\nsearch(query=\"a\")\n\nfetch(url=\"https://go.dev\")\n```\n\n", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "search", Arguments: json.RawMessage(`{"query":"a"}`)},
			{ID: "call_tool_code_1", Name: "fetch", Arguments: json.RawMessage(`{"url":"https://go.dev"}`)}}},
		{"positional aliases", "```tool_code\nsearch(\"x\")\nweb_search(\"y\")\nfetch(\"u\")\nweb_fetch(\"v\")\necho({\"a\": [1, 2]})\n```", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "search", Arguments: json.RawMessage(`{"query":"x"}`)},
			{ID: "call_tool_code_1", Name: "web_search", Arguments: json.RawMessage(`{"query":"y"}`)},
			{ID: "call_tool_code_2", Name: "fetch", Arguments: json.RawMessage(`{"url":"u"}`)},
			{ID: "call_tool_code_3", Name: "web_fetch", Arguments: json.RawMessage(`{"url":"v"}`)},
			{ID: "call_tool_code_4", Name: "echo", Arguments: json.RawMessage(`{"value":{"a":[1,2]}}`)}}},
		{"positional for a one-parameter tool", "```tool_code\nlookup(\"k\")\n```", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "lookup", Arguments: json.RawMessage(`{"key":"k"}`)}}},
		{"python literals", "```tool_code\npair(a=True, b='it\\'s')\nlookup(key=None)\nsearch()\n```", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "pair", Arguments: json.RawMessage(`{"a":true,"b":"it's"}`)},
			{ID: "call_tool_code_1", Name: "lookup", Arguments: json.RawMessage(`{"key":null}`)},
			{ID: "call_tool_code_2", Name: "search", Arguments: json.RawMessage(`{}`)}}},
		{"values with commas and parens", "```tool_code\nsearch(query=\"a, b (c)\", count=-1.5e2,)\n```", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "search", Arguments: json.RawMessage(`{"query":"a, b (c)","count":-1.5e2}`)}}},
		{"two fences are two calls, ids counting on", "```tool_code\nsearch(query=\"a\")\n```\n\n```tool_code\nfetch(url=\"u\")\nlookup(key=\"k\")\n```", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "search", Arguments: json.RawMessage(`{"query":"a"}`)},
			{ID: "call_tool_code_1", Name: "fetch", Arguments: json.RawMessage(`{"url":"u"}`)},
			{ID: "call_tool_code_2", Name: "lookup", Arguments: json.RawMessage(`{"key":"k"}`)}}},
		{"a name outside the offered tools is still a call", "```tool_code\nweather(city=\"Oslo\")\n```", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}}},
		{"json fence", "```json\n{\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"search\",\"arguments\":\"{\\\"query\\\":\\\"go\\\"}\"}},{\"name\":\"fetch\",\"arguments\":{\"url\":\"u\"}}]}\n```", []gateway.ToolCall{
			{ID: "call_tool_code_0", Name: "search", Arguments: json.RawMessage(`{"query":"go"}`)},
			{ID: "call_tool_code_1", Name: "fetch", Arguments: json.RawMessage(`{"url":"u"}`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := gatewaytest.New(t)
			s.Enqueue(gatewaytest.Text(tt.content))
			got, err := newClient(t, s).Complete(t.Context(), gemmaTurn("q"))
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != "" || !reflect.DeepEqual(got.ToolCalls, tt.want) {
				t.Errorf("got text %q calls %s\nwant %s", got.Text, callsString(got.ToolCalls), callsString(tt.want))
			}
		})
	}
}

func callsString(calls []gateway.ToolCall) string {
	b, _ := json.Marshal(calls)
	return string(b)
}

func TestGemmaTextIsNotACall(t *testing.T) {
	for _, content := range []string{
		"The answer is 42.",
		"Here is code:\n```tool_code\nsearch(query=\"x\")\n```",
		"```json\n{\"answer\": 42}\n```",
		"```json\nnot json at all\n```",
		"```python\nprint(1)\n```",
	} {
		s := gatewaytest.New(t)
		s.Enqueue(gatewaytest.Text(content))
		got, err := newClient(t, s).Complete(t.Context(), gemmaTurn("q"))
		if err != nil {
			t.Fatalf("%q: %v", content, err)
		}
		if got.Text != content || got.ToolCalls != nil {
			t.Errorf("%q: got %+v", content, got)
		}
	}
	// Without tools on offer, a fence is just text.
	s := gatewaytest.New(t)
	fence := "```tool_code\nsearch(query=\"x\")\n```"
	s.Enqueue(gatewaytest.Text(fence))
	req := gemmaTurn("q")
	req.Tools = nil
	got, err := newClient(t, s).Complete(t.Context(), req)
	if err != nil || got.Text != fence {
		t.Errorf("no tools: %+v, %v", got, err)
	}
}

func TestGemmaMalformedFence(t *testing.T) {
	for _, content := range []string{
		"```tool_code\n```",
		"```tool_code\nsearch(query=)\n```",
		"```tool_code\nsearch(query=\"a\"\n```",
		"```tool_code\nsearch(query=\"a\") extra\n```",
		"```tool_code\nsearch(\"a\", count=2)\n```",
		"```tool_code\npair(1, 2)\n```",
		"```tool_code\npair(1)\n```",
		"```tool_code\nsearch(query=\"a\", query=\"b\")\n```",
		"```tool_code\njust words\n```",
		"```tool_code\nsearch(query='open\n```",
		// An unterminated fence, and prose after a fence, are not calls
		// (issue 11 item 13): a reply cut short, or a model still
		// talking, has not settled on what to run.
		"```tool_code\nsearch(query=\"a\")\n",
		"```tool_code\nsearch(query=\"a\")",
		"```tool_code\nsearch(query=\"a\")\n```\nI will now search.",
		"```tool_code\nsearch(query=\"a\")\n```\n\n```tool_code\nfetch(url=\"u\")\n",
		"```tool_code\nsearch(query=\"a\")\n```\n```python\nprint(1)\n```",
		"```tool_code\nsearch(query=\"a\")\n```tool_code\nfetch(url=\"u\")\n```",
		// A name that is not an identifier is a malformed reply, not a
		// call to a tool that was not offered.
		"```tool_code\nweb-search(query=\"a\")\n```",
		"```tool_code\nweb.search(query=\"a\")\n```",
		"```tool_code\n1search(query=\"a\")\n```",
		"```json\n{\"tool_calls\":[]}\n```",
		"```json\n{\"tool_calls\":[{\"name\":\"search\",\"arguments\":\"[1]\"}]}\n```",
		"```json\n{\"tool_calls\":[{\"arguments\":{}}]}\n```",
	} {
		s := gatewaytest.New(t)
		s.Enqueue(gatewaytest.Text(content))
		_, err := newClient(t, s).Complete(t.Context(), gemmaTurn("q"))
		if err == nil {
			t.Errorf("%q accepted", content)
			continue
		}
		asError(t, err, gateway.KindMalformed)
	}
}

func TestGemmaNativeToolCallsStillAccepted(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Calls(gatewaytest.Call{ID: "n1", Name: "search", Args: map[string]string{"query": "x"}}))
	got, err := newClient(t, s).Complete(t.Context(), gemmaTurn("q"))
	if err != nil || len(got.ToolCalls) != 1 || got.ToolCalls[0].ID != "n1" {
		t.Errorf("got %+v, %v", got, err)
	}
}

const gemmaClosing = "Call another tool with a ```tool_code fence if you need more, or answer the original request using these results."

func TestEchoToolResultsGemma(t *testing.T) {
	calls := []gateway.ToolCall{
		{ID: "call_tool_code_1", Name: "search", Arguments: json.RawMessage(`{"query":"go","count":3}`)},
		{ID: "call_tool_code_2", Name: "fetch", Arguments: json.RawMessage(`{"url":"https://go.dev"}`)},
	}
	got := gateway.EchoToolResults(gateway.DialectGemma3, calls, []string{"hits", "page"})
	want := []gateway.Message{
		{Role: "assistant", Content: "```tool_code\nsearch(query=\"go\", count=3)\nfetch(url=\"https://go.dev\")\n```"},
		{Role: "user", Content: "TOOL RESULT search (call_tool_code_1):\nhits\n\nTOOL RESULT fetch (call_tool_code_2):\npage\n\n" + gemmaClosing},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestGemmaHistoryInOpenAIShapeIsRewritten(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("final"))
	calls := []gateway.ToolCall{{ID: "x1", Name: "search", Arguments: json.RawMessage(`{"query":"go"}`)}}
	req := gemmaTurn("q")
	req.Messages = append(req.Messages, gateway.EchoToolResults(gateway.DialectOpenAI, calls, []string{"hits"})...)
	if _, err := newClient(t, s).Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	msgs := s.Requests()[0].Messages
	if len(msgs) != 4 {
		t.Fatalf("messages: %v", msgs)
	}
	want := []map[string]any{
		{"role": "assistant", "content": "```tool_code\nsearch(query=\"go\")\n```"},
		{"role": "user", "content": "TOOL RESULT search (x1):\nhits\n\n" + gemmaClosing},
	}
	if !reflect.DeepEqual(msgs[2:], want) {
		t.Errorf("history on the wire: %v", msgs[2:])
	}
}
