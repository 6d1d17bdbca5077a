package gateway_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
)

func ptr[T any](v T) *T { return &v }

func TestRequestBodyExact(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("done"))
	req := gateway.ChatRequest{
		Model: "reasoning-large",
		Messages: []gateway.Message{
			{Role: "system", Content: "be brief"},
			{Role: "user", Content: "find <Go> & more"},
			{Role: "assistant", ToolCalls: []gateway.ToolCall{{ID: "c1", Name: "search", Arguments: json.RawMessage(`{ "query" : "go <1.26>" }`)}}},
			{Role: "tool", Content: "result", ToolCallID: "c1"},
		},
		Tools: []gateway.ToolSpec{{
			Name: "search", Description: "Search the web",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		}},
		Temperature: ptr(0.7),
		MaxTokens:   ptr(4096),
		Thinking:    ptr(true),
	}
	comp, err := newClient(t, s).Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"reasoning-large","messages":[` +
		`{"role":"system","content":"be brief"},` +
		`{"role":"user","content":"find <Go> & more"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{\"query\":\"go <1.26>\"}"}}]},` +
		`{"role":"tool","content":"result","tool_call_id":"c1"}],` +
		`"tools":[{"type":"function","function":{"name":"search","description":"Search the web","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}}],` +
		`"tool_choice":"auto","temperature":0.7,"max_tokens":4096,"chat_template_kwargs":{"enable_thinking":true}}`
	if got := string(s.Requests()[0].Raw); got != want {
		t.Errorf("wire body:\n%s\nwant\n%s", got, want)
	}
	if string(comp.RequestJSON) != want {
		t.Errorf("RequestJSON differs from the wire body")
	}
	if !json.Valid(comp.ResponseJSON) || !strings.Contains(string(comp.ResponseJSON), `"content":"done"`) {
		t.Errorf("ResponseJSON = %s", comp.ResponseJSON)
	}
}

func TestRequestBodyMinimal(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("a"), gatewaytest.Text("b"))
	c := newClient(t, s)
	if _, err := c.Complete(t.Context(), userTurn("hi")); err != nil {
		t.Fatal(err)
	}
	req := userTurn("hi")
	req.Thinking = ptr(false)
	req.Tools = []gateway.ToolSpec{{Name: "noargs", Description: "d"}}
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if got, want := string(reqs[0].Raw), `{"model":"test-model","messages":[{"role":"user","content":"hi"}]}`; got != want {
		t.Errorf("minimal body %s, want %s", got, want)
	}
	for _, key := range []string{"stream", "tools", "tool_choice", "temperature", "max_tokens", "chat_template_kwargs"} {
		if _, ok := reqs[0].Body[key]; ok {
			t.Errorf("minimal body has %q", key)
		}
	}
	if got := reqs[1].Body["chat_template_kwargs"]; !reflect.DeepEqual(got, map[string]any{"enable_thinking": false}) {
		t.Errorf("thinking=false sent as %v", got)
	}
	tools := reqs[1].Body["tools"].([]any)
	params := tools[0].(map[string]any)["function"].(map[string]any)["parameters"]
	if !reflect.DeepEqual(params, map[string]any{"type": "object", "properties": map[string]any{}}) {
		t.Errorf("a tool without a schema got parameters %v", params)
	}
}

func TestInvalidRequestsSendNothing(t *testing.T) {
	s := gatewaytest.New(t)
	c := newClient(t, s)
	base := userTurn("hi")
	tests := map[string]func(r *gateway.ChatRequest){
		"blank model":     func(r *gateway.ChatRequest) { r.Model = " " },
		"no messages":     func(r *gateway.ChatRequest) { r.Messages = nil },
		"bad tool name":   func(r *gateway.ChatRequest) { r.Tools = []gateway.ToolSpec{{Name: "web search"}} },
		"empty tool name": func(r *gateway.ChatRequest) { r.Tools = []gateway.ToolSpec{{Name: ""}} },
		"array parameters": func(r *gateway.ChatRequest) {
			r.Tools = []gateway.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[]`)}}
		},
		"broken parameters": func(r *gateway.ChatRequest) {
			r.Tools = []gateway.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"a":`)}}
		},
		"duplicate tools": func(r *gateway.ChatRequest) { r.Tools = []gateway.ToolSpec{{Name: "t"}, {Name: "t"}} },
		"unknown dialect": func(r *gateway.ChatRequest) { r.Dialect = "hermes" },
		"zero max_tokens": func(r *gateway.ChatRequest) { r.MaxTokens = ptr(0) },
		"bad call args": func(r *gateway.ChatRequest) {
			r.Messages = append(r.Messages, gateway.Message{Role: "assistant", ToolCalls: []gateway.ToolCall{{ID: "1", Name: "t", Arguments: json.RawMessage(`{`)}}})
		},
	}
	for name, edit := range tests {
		req := base
		edit(&req)
		_, err := c.Complete(t.Context(), req)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		asError(t, err, gateway.KindConfig)
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d invalid requests reached the gateway", n)
	}
}

func TestTextReplies(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(
		gatewaytest.Text("  hello\n"),
		gatewaytest.TextFinish("cut", "length"),
		gatewaytest.TextFinish("no reason", ""),
		gatewaytest.Text("answer").WithReasoning("because"),
	)
	c := newClient(t, s)
	want := []gateway.Completion{
		{Text: "  hello\n", FinishReason: "stop"},
		{Text: "cut", FinishReason: "length"},
		{Text: "no reason"},
		{Text: "answer", FinishReason: "stop", Reasoning: "because"},
	}
	for i, w := range want {
		got, err := c.Complete(t.Context(), userTurn("q"))
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if got.Text != w.Text || got.FinishReason != w.FinishReason || got.Reasoning != w.Reasoning || got.ToolCalls != nil {
			t.Errorf("%d: got %+v, want %+v", i, got, w)
		}
	}
}

func TestToolCallReply(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Calls(
		gatewaytest.Call{ID: "a", Name: "search", Args: `{ "query": "go", "n": [1, 2] }`},
		gatewaytest.Call{ID: "b", Name: "fetch", Args: map[string]string{"url": "https://go.dev"}},
	))
	got, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
	if err != nil {
		t.Fatal(err)
	}
	want := []gateway.ToolCall{
		{ID: "a", Name: "search", Arguments: json.RawMessage(`{"query":"go","n":[1,2]}`)},
		{ID: "b", Name: "fetch", Arguments: json.RawMessage(`{"url":"https://go.dev"}`)},
	}
	if got.Text != "" || got.FinishReason != "tool_calls" || !reflect.DeepEqual(got.ToolCalls, want) {
		t.Errorf("got %+v", got)
	}
}

func TestToolCallsWinOverContent(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Malformed(`{"choices":[{"index":0,"message":{"role":"assistant","content":"let me look",
		"tool_calls":[{"id":"x","type":"function","function":{"name":"search","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
	got, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "" || len(got.ToolCalls) != 1 || string(got.ToolCalls[0].Arguments) != "{}" {
		t.Errorf("got %+v", got)
	}
}

func TestReasoningSideChannel(t *testing.T) {
	tests := []struct {
		fields string
		want   string
	}{
		{`"reasoning_content":"first","reasoning":"second"`, "first"},
		{`"reasoning_content":"  ","reasoning":"second","thinking":"third"`, "second"},
		{`"reasoning_content":null,"thinking":"third"`, "third"},
		{`"reasoning":""`, ""},
	}
	for _, tt := range tests {
		s := gatewaytest.New(t)
		s.Enqueue(gatewaytest.Malformed(`{"choices":[{"message":{"content":"ok",` + tt.fields + `},"finish_reason":"stop"}]}`))
		got, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
		if err != nil {
			t.Fatalf("%s: %v", tt.fields, err)
		}
		if got.Reasoning != tt.want || got.Text != "ok" {
			t.Errorf("%s: reasoning %q text %q, want %q", tt.fields, got.Reasoning, got.Text, tt.want)
		}
	}
}

func TestEmptyReplies(t *testing.T) {
	tests := []struct {
		reply     gatewaytest.Reply
		msg       string
		finish    string
		reasoning bool
	}{
		{gatewaytest.Empty("stop"), "empty model reply", "stop", false},
		{gatewaytest.TextFinish(" \n\t", "stop"), "empty model reply", "stop", false},
		{gatewaytest.Empty(""), "empty model reply", "", false},
		{gatewaytest.Empty("stop").WithReasoning("I was thinking"), "empty model reply: reasoning content was present but ignored", "stop", true},
		{gatewaytest.Empty("length").WithReasoning("I was thinking"), `empty model reply: the model spent its output budget reasoning and stopped (finish_reason "length") before answering; raise max_tokens, or turn thinking off for this need`, "length", true},
		{gatewaytest.TextFinish("<think>\nStill weighing the options", "length"), `empty model reply: the model spent its output budget reasoning and stopped (finish_reason "length") before answering; raise max_tokens, or turn thinking off for this need`, "length", true},
		{gatewaytest.Malformed(`{"choices":[{"message":{"content":null},"finish_reason":"stop"}]}`), "empty model reply", "stop", false},
		{gatewaytest.Malformed(`{"choices":[{"message":{"tool_calls":[]},"finish_reason":"tool_calls"}]}`), "empty model reply", "tool_calls", false},
	}
	for i, tt := range tests {
		s := gatewaytest.New(t)
		s.Enqueue(tt.reply)
		_, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
		ge := asError(t, err, gateway.KindEmptyReply)
		if err.Error() != tt.msg || ge.FinishReason != tt.finish || ge.ReasoningIgnored != tt.reasoning || ge.Retryable() {
			t.Errorf("%d: %q finish %q reasoning %v", i, err, ge.FinishReason, ge.ReasoningIgnored)
		}
		if len(ge.RequestJSON) == 0 || len(ge.ResponseJSON) == 0 {
			t.Errorf("%d: debug capture missing", i)
		}
	}
}

func TestMalformedReplies(t *testing.T) {
	call := func(fields string) string {
		return `{"choices":[{"message":{"tool_calls":[` + fields + `]}}]}`
	}
	good := `{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}`
	tests := []struct {
		name, body, want string
	}{
		{"not an object", `[1]`, "the body is not a JSON object"},
		{"no choices", `{"id":"x"}`, "choices is missing or not an array"},
		{"choices object", `{"choices":{}}`, "choices is missing or not an array"},
		{"choices empty", `{"choices":[]}`, "choices is empty"},
		{"choice scalar", `{"choices":[1]}`, "choices[0] is not an object"},
		{"no message", `{"choices":[{"index":0}]}`, "choices[0].message is missing or not an object"},
		{"message string", `{"choices":[{"message":"hi"}]}`, "choices[0].message is missing or not an object"},
		{"finish number", `{"choices":[{"message":{"content":"x"},"finish_reason":1}]}`, "finish_reason is not a string"},
		{"tool_calls object", `{"choices":[{"message":{"tool_calls":{}}}]}`, "tool_calls is not an array"},
		{"content number", `{"choices":[{"message":{"content":5}}]}`, "content is not a string"},
		{"content parts", `{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`, "content is not a string"},
		{"reasoning number", `{"choices":[{"message":{"content":"x","reasoning":5}}]}`, "reasoning is not a string"},
		{"call type", call(`{"id":"a","type":"tool","function":{"name":"f","arguments":"{}"}}`), `tool_calls[0] type is not "function"`},
		{"call blank id", call(`{"id":" ","type":"function","function":{"name":"f","arguments":"{}"}}`), "has no id"},
		{"call no function", call(`{"id":"a","type":"function"}`), "has no function object"},
		{"call blank name", call(`{"id":"a","type":"function","function":{"name":"","arguments":"{}"}}`), "has no function name"},
		{"args object", call(`{"id":"a","type":"function","function":{"name":"f","arguments":{}}}`), "arguments are not a string"},
		{"args not JSON", call(`{"id":"a","type":"function","function":{"name":"f","arguments":"{oops"}}`), "arguments are not a JSON object"},
		{"args array", call(`{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}`), "arguments are not a JSON object"},
		{"args blank", call(`{"id":"a","type":"function","function":{"name":"f","arguments":" x"}}`), "arguments are not a JSON object"},
		{"call type number", call(`{"id":"a","type":1,"function":{"name":"f","arguments":"{}"}}`), `type is not "function"`},
		{"refusal number", `{"choices":[{"message":{"content":null,"refusal":5}}]}`, "refusal is not a string"},
		{"args trailing", call(`{"id":"a","type":"function","function":{"name":"f","arguments":"{} {}"}}`), "arguments are not a JSON object"},
		{"duplicate ids", call(good + "," + good), `tool call id "a" is used twice`},
		{"call scalar", call(`7`), "tool_calls[0] is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := gatewaytest.New(t)
			s.Enqueue(gatewaytest.Malformed(tt.body))
			_, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
			ge := asError(t, err, gateway.KindMalformed)
			if !strings.Contains(err.Error(), tt.want) || !ge.Retryable() {
				t.Errorf("got %q, want it to contain %q", err, tt.want)
			}
			if string(ge.ResponseJSON) != tt.body {
				t.Errorf("ResponseJSON = %s", ge.ResponseJSON)
			}
		})
	}
}

func TestToolCallJSON(t *testing.T) {
	tc := gateway.ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{ "q" : "<a&b>" }`)}
	b, err := json.Marshal(tc)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		ID, Type string
		Function struct{ Name, Arguments string }
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if wire.ID != "c1" || wire.Type != "function" || wire.Function.Name != "search" || wire.Function.Arguments != `{"q":"<a&b>"}` {
		t.Errorf("Marshal = %s", b)
	}
	var back gateway.ToolCall
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != "c1" || back.Name != "search" || string(back.Arguments) != `{"q":"<a&b>"}` {
		t.Errorf("round trip = %+v", back)
	}
	b, _ = json.Marshal(gateway.ToolCall{ID: "c2", Name: "t"})
	if !strings.Contains(string(b), `"arguments":"{}"`) {
		t.Errorf("empty arguments marshal as %s", b)
	}
	for _, bad := range []string{
		`{"id":"a","type":"function","function":{"name":"f","arguments":"[]"}}`,
		`{"id":"a","type":"x","function":{"name":"f","arguments":"{}"}}`,
		`"str"`,
	} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("Unmarshal accepted %s", bad)
		}
	}
}

func TestEchoToolResultsOpenAI(t *testing.T) {
	calls := []gateway.ToolCall{
		{ID: "a", Name: "search", Arguments: json.RawMessage(`{"query":"go"}`)},
		{ID: "b", Name: "fetch", Arguments: json.RawMessage(`{"url":"u"}`)},
	}
	msgs := gateway.EchoToolResults(gateway.DialectOpenAI, calls, []string{"r1", "r2"})
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"assistant","content":"","tool_calls":[` +
		`{"id":"a","type":"function","function":{"name":"search","arguments":"{\"query\":\"go\"}"}},` +
		`{"id":"b","type":"function","function":{"name":"fetch","arguments":"{\"url\":\"u\"}"}}]},` +
		`{"role":"tool","content":"r1","tool_call_id":"a"},{"role":"tool","content":"r2","tool_call_id":"b"}]`
	if string(b) != want {
		t.Errorf("echo:\n%s\nwant\n%s", b, want)
	}
	if got := gateway.EchoToolResults("", calls[:1], nil); len(got) != 2 || got[1].Content != "" || got[1].ToolCallID != "a" {
		t.Errorf("missing result: %+v", got)
	}
}

// A chat request over the size limit is refused before anything is sent,
// naming the limit and the setting; one under it goes out.
func TestOversizedRequestSendsNothing(t *testing.T) {
	s := gatewaytest.New(t)
	c := newClient(t, s, func(o *gateway.Options) { o.MaxRequestBytes = 4096 })
	_, err := c.Complete(t.Context(), userTurn(strings.Repeat("x", 5000)))
	ge := asError(t, err, gateway.KindConfig)
	if msg := ge.Error(); !strings.Contains(msg, "over the 4096-byte request limit") || !strings.Contains(msg, "[limits].max_request_size") {
		t.Fatalf("message: %s", msg)
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d oversized requests reached the gateway", n)
	}
	s.Enqueue(gatewaytest.Text("ok"))
	if _, err := c.Complete(t.Context(), userTurn(strings.Repeat("x", 3000))); err != nil {
		t.Fatalf("a request under the limit: %v", err)
	}
	_, err = gateway.New(gateway.Options{BaseURL: s.URL(), APIKey: secret.MustNew(s.APIKey()), MaxRequestBytes: -1})
	if err == nil || !strings.Contains(err.Error(), "request size limit is negative") {
		t.Fatalf("a negative limit: %v", err)
	}
}
