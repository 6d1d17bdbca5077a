package gatewaytest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const chatBody = `{"model":"test-model","messages":[{"role":"user","content":"hi"}]}`

// call sends one request with the server's key (unless key is given) and
// returns the status and body.
func call(t *testing.T, ctx context.Context, s *gatewaytest.Server, method, path, body string, key ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	k := s.APIKey()
	if len(key) > 0 {
		k = key[0]
	}
	if k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

type chatReply struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			Reasoning string  `json:"reasoning_content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

func decodeChat(t *testing.T, b []byte) chatReply {
	t.Helper()
	var r chatReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("reply is not JSON: %v\n%s", err, b)
	}
	if len(r.Choices) != 1 {
		t.Fatalf("want one choice, got %s", b)
	}
	return r
}

func TestQueueOrderAndRecording(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("first"), gatewaytest.TextFinish("second", ""))
	for i, want := range []string{"first", "second"} {
		code, b := call(t, t.Context(), s, "POST", "/chat/completions",
			`{"model":"m`+string(rune('0'+i))+`","messages":[{"role":"user","content":"q"}]}`)
		if code != 200 {
			t.Fatalf("status %d: %s", code, b)
		}
		r := decodeChat(t, b)
		if got := *r.Choices[0].Message.Content; got != want {
			t.Errorf("reply %d = %q, want %q", i, got, want)
		}
		if wantModel := "m" + string(rune('0'+i)); r.Model != wantModel {
			t.Errorf("reply %d echoes model %q, want %q", i, r.Model, wantModel)
		}
	}
	code, b := call(t, t.Context(), s, "POST", "/chat/completions", chatBody)
	if code != 500 || !strings.Contains(string(b), "gatewaytest: no scripted reply for request 3") {
		t.Errorf("unscripted request: %d %s", code, b)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("recorded %d requests, want 3", len(reqs))
	}
	if reqs[0].Body["model"] != "m0" || reqs[1].Body["model"] != "m1" {
		t.Errorf("requests out of order: %v, %v", reqs[0].Body["model"], reqs[1].Body["model"])
	}
	if got := reqs[0].Messages[0]["content"]; got != "q" {
		t.Errorf("Messages[0].content = %v", got)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+s.APIKey() {
		t.Errorf("recorded Authorization = %q", got)
	}
	if !json.Valid(reqs[0].Raw) {
		t.Errorf("Raw is not the JSON body: %s", reqs[0].Raw)
	}
}

func TestFinishReasonNullAndReasoning(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.TextFinish("x", ""), gatewaytest.Empty("length").WithReasoning("hmm"))
	_, b := call(t, t.Context(), s, "POST", "/chat/completions", chatBody)
	if r := decodeChat(t, b); r.Choices[0].FinishReason != nil {
		t.Errorf("finish_reason = %q, want null", *r.Choices[0].FinishReason)
	}
	_, b = call(t, t.Context(), s, "POST", "/chat/completions", chatBody)
	r := decodeChat(t, b)
	if got := *r.Choices[0].FinishReason; got != "length" {
		t.Errorf("finish_reason = %q", got)
	}
	if m := r.Choices[0].Message; *m.Content != "" || m.Reasoning != "hmm" {
		t.Errorf("message = %+v", m)
	}
}

func TestRespondWhenQueueEmpty(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("queued"))
	s.Respond(func(r gatewaytest.Request) gatewaytest.Reply {
		return gatewaytest.Text("echo:" + r.Messages[0]["content"].(string))
	})
	for _, want := range []string{"queued", "echo:hi", "echo:hi"} {
		_, b := call(t, t.Context(), s, "POST", "/chat/completions", chatBody)
		if got := *decodeChat(t, b).Choices[0].Message.Content; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestCallsArguments(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Calls(
		gatewaytest.Call{Name: "none"},
		gatewaytest.Call{ID: "given", Name: "raw", Args: "not json"},
		gatewaytest.Call{Name: "obj", Args: map[string]int{"n": 1}},
		gatewaytest.Call{Name: "rawjson", Args: json.RawMessage(`{"a": true}`)},
	))
	_, b := call(t, t.Context(), s, "POST", "/chat/completions", chatBody)
	r := decodeChat(t, b)
	if r.Choices[0].Message.Content != nil || *r.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("want null content and finish tool_calls: %s", b)
	}
	want := []struct{ id, name, args string }{
		{"call_1", "none", "{}"}, {"given", "raw", "not json"}, {"call_3", "obj", `{"n":1}`}, {"call_4", "rawjson", `{"a": true}`},
	}
	calls := r.Choices[0].Message.ToolCalls
	if len(calls) != len(want) {
		t.Fatalf("got %d calls", len(calls))
	}
	for i, w := range want {
		c := calls[i]
		if c.ID != w.id || c.Type != "function" || c.Function.Name != w.name || c.Function.Arguments != w.args {
			t.Errorf("call %d = %+v, want %+v", i, c, w)
		}
	}
}

func TestAuthentication(t *testing.T) {
	s := gatewaytest.New(t)
	routes := []struct{ method, path, body string }{
		{"POST", "/chat/completions", chatBody},
		{"GET", "/models", ""},
		{"POST", "/tools/web_search", `{"query":"go"}`},
	}
	for _, rt := range routes {
		for _, key := range []string{"wrong", ""} {
			code, b := call(t, t.Context(), s, rt.method, rt.path, rt.body, key)
			var env struct {
				Error struct{ Message, Type, Code string }
			}
			_ = json.Unmarshal(b, &env)
			if code != 401 || env.Error.Code != "unauthorized" || env.Error.Type != "authentication_error" || env.Error.Message != "unauthorized" {
				t.Errorf("%s %s with key %q: %d %s", rt.method, rt.path, key, code, b)
			}
		}
	}
	if len(s.Requests()) != 0 || s.ModelsCalls() != 0 || len(s.SearchRequests()) != 0 {
		t.Error("unauthorised requests were recorded")
	}
	resp, err := http.Get(strings.TrimSuffix(s.URL(), "/v1") + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `{"status":"serving"}` {
		t.Errorf("/health without a token: %d %s", resp.StatusCode, b)
	}
}

func TestRequestShapeRefused(t *testing.T) {
	s := gatewaytest.New(t)
	for name, body := range map[string]string{
		"not an object":   `[1]`,
		"blank model":     `{"model":" ","messages":[{"role":"user","content":"x"}]}`,
		"no messages":     `{"model":"m","messages":[]}`,
		"message scalar":  `{"model":"m","messages":["x"]}`,
		"unknown role":    `{"model":"m","messages":[{"role":"robot","content":"x"}]}`,
		"no content/call": `{"model":"m","messages":[{"role":"user"}]}`,
	} {
		code, b := call(t, t.Context(), s, "POST", "/chat/completions", body)
		if code != 400 || !strings.Contains(string(b), "malformed_request") {
			t.Errorf("%s: %d %s", name, code, b)
		}
	}
	s.Enqueue(gatewaytest.Text("ok"))
	code, b := call(t, t.Context(), s, "POST", "/chat/completions",
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[]}]}`)
	if code != 200 {
		t.Errorf("assistant tool-call message without content refused: %d %s", code, b)
	}

	req, _ := http.NewRequest("POST", s.URL()+"/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer "+s.APIKey())
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: status %d, want 415", resp.StatusCode)
	}
}

func TestModels(t *testing.T) {
	s := gatewaytest.New(t)
	code, b := call(t, t.Context(), s, "GET", "/models", "")
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(b, &list); code != 200 || err != nil || len(list.Data) != 1 {
		t.Fatalf("default models: %d %s", code, b)
	}
	if e := list.Data[0]; e["id"] != "test-model" || e["description"] != "A general assistant model for tests" || e["context"] != 32768.0 || e["thinking"] != "never" {
		t.Errorf("default entry = %v", e)
	}

	s.SetModels(map[string]any{"id": "llama3", "object": "model", "owned_by": "me"})
	_, b = call(t, t.Context(), s, "GET", "/models", "")
	if !strings.Contains(string(b), `"id":"llama3"`) || strings.Contains(string(b), "test-model") {
		t.Errorf("SetModels not served: %s", b)
	}

	s.SetModelsReply(gatewaytest.Status(503, "down"))
	code, b = call(t, t.Context(), s, "GET", "/models", "")
	if code != 503 || string(b) != "down" {
		t.Errorf("SetModelsReply: %d %s", code, b)
	}
	if got := s.ModelsCalls(); got != 3 {
		t.Errorf("ModelsCalls = %d, want 3", got)
	}
}

func TestSearch(t *testing.T) {
	s := gatewaytest.New(t)
	s.EnqueueSearch(gatewaytest.Search(gatewaytest.SearchHit{Title: "Go", URL: "https://go.dev/", Description: "The Go language"}))
	code, b := call(t, t.Context(), s, "POST", "/tools/web_search", `{"query":"  golang  ","count":3}`)
	want := `{"query":"golang","results":[{"title":"Go","url":"https://go.dev/","description":"The Go language"}]}`
	if code != 200 || string(b) != want {
		t.Errorf("search: %d %s\nwant %s", code, b, want)
	}
	code, b = call(t, t.Context(), s, "POST", "/tools/web_search", `{"query":"   "}`)
	if code != 400 || !strings.Contains(string(b), "malformed request: web_search: empty query") {
		t.Errorf("blank query: %d %s", code, b)
	}
	code, b = call(t, t.Context(), s, "POST", "/tools/web_search", `{"query":"again"}`)
	if code != 500 || !strings.Contains(string(b), "gatewaytest: no scripted search reply for request 2") {
		t.Errorf("unscripted search: %d %s", code, b)
	}
	if reqs := s.SearchRequests(); len(reqs) != 2 || reqs[0].Body["count"] != 3.0 {
		t.Errorf("SearchRequests = %+v", reqs)
	}
}

func TestGateHoldsRequestsAndCountsInFlight(t *testing.T) {
	s := gatewaytest.New(t)
	g := gatewaytest.NewGate()
	s.Enqueue(gatewaytest.Gated(g, gatewaytest.Text("a")), gatewaytest.Gated(g, gatewaytest.Text("b")))

	var wg sync.WaitGroup
	got := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			_, b := call(t, t.Context(), s, "POST", "/chat/completions", chatBody)
			got[i] = *decodeChat(t, b).Choices[0].Message.Content
		})
	}
	<-g.Arrived()
	<-g.ArrivedN(2)
	if w, f := g.Waiting(), s.InFlight(); w != 2 || f != 2 {
		t.Errorf("before release: Waiting=%d InFlight=%d, want 2 and 2", w, f)
	}
	g.Release()
	wg.Wait()
	if got[0] == got[1] || got[0]+got[1] != "ab" && got[0]+got[1] != "ba" {
		t.Errorf("replies = %q", got)
	}
	if f, m := s.InFlight(), s.MaxInFlight(); f != 0 || m != 2 {
		t.Errorf("after: InFlight=%d MaxInFlight=%d, want 0 and 2", f, m)
	}
	g.Release() // idempotent
	select {
	case <-g.ArrivedN(2):
	default:
		t.Error("ArrivedN for a count already reached is not closed")
	}
}

func TestHangEndsWithTheClient(t *testing.T) {
	s := gatewaytest.New(t)
	g := gatewaytest.NewGate()
	s.Enqueue(gatewaytest.Gated(g, gatewaytest.Hang()))
	g.Release()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL()+"/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", "Bearer "+s.APIKey())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-g.Arrived()
	cancel()
	if err := <-errc; err == nil {
		t.Error("a hung request answered")
	}
}

func TestCloseReleasesHeldRequests(t *testing.T) {
	s := gatewaytest.New(t)
	g := gatewaytest.NewGate()
	s.Enqueue(gatewaytest.Gated(g, gatewaytest.Text("never")))
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.URL()+"/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", "Bearer "+s.APIKey())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-g.Arrived()
	s.Close()
	if err := <-errc; err == nil {
		t.Error("a request held at a gate answered after Close")
	}
	s.Close() // idempotent
}

func TestWireShapesLoadAndServeVerbatim(t *testing.T) {
	shapes, err := gatewaytest.WireShapes()
	if err != nil {
		t.Fatal(err)
	}
	if len(shapes) < 20 {
		t.Fatalf("only %d wire shapes", len(shapes))
	}
	var vllm *gatewaytest.WireShape
	for i := range shapes {
		if shapes[i].Name == "vllm-no-auto-tool" {
			vllm = &shapes[i]
		}
	}
	if vllm == nil || vllm.ToolCall.Status != 400 {
		t.Fatalf("vllm-no-auto-tool: %+v", vllm)
	}
	s := gatewaytest.New(t)
	s.Enqueue(vllm.ToolCall.Reply())
	status, body := call(t, t.Context(), s, "POST", "/chat/completions", chatBody)
	if status != 400 || string(body) != string(vllm.ToolCall.Body) {
		t.Fatalf("status %d body %s", status, body)
	}
}
