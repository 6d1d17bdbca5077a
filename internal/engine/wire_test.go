package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/store"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// prompt-language §8.9 Model wire, tool loop, guard — and cancellation.

const needSearch = "```lua\ntools.need(\"search\", \"Search the web and return a list of results (title, url, description).\")\nmodels.default(\"writer\", \"A general assistant model\")\n```\n"

func searchPrompt(t *testing.T, fm string) string {
	if fm == "" {
		fm = header
	}
	return fm + "# T\n\n" + needSearch + "\n## A\n\n" + lua(`tools.add("search")`) + "\nFind {{ args }}.\n"
}

func callSearch(q string) gatewaytest.Reply {
	return gatewaytest.Calls(gatewaytest.Call{Name: "search", Args: map[string]any{"query": q}})
}

func TestWire_ToolLoop(t *testing.T) {
	g := newGW(t)
	search := searchTool()
	g.Enqueue(callSearch("one"), gatewaytest.Text("the answer"))
	cfg := g.cfg()
	cfg.Tools = []tools.Tool{search}
	r := runP(t, parse(t, searchPrompt(t, "")), "cats", cfg)
	r.ok(t, "the answer")
	if r.Turns != 2 || len(search.calls) != 1 || search.calls[0] != `{"query":"one"}` {
		t.Fatalf("turns %d calls %v", r.Turns, search.calls)
	}
	reqs := g.Requests()
	if got := toolNames(reqs[0]); len(got) != 1 || got[0] != "search" {
		t.Fatalf("advertised %v", got)
	}
	if reqs[0].Body["tool_choice"] != "auto" {
		t.Fatalf("tool_choice %v", reqs[0].Body["tool_choice"])
	}
	m := reqs[1].Messages
	if len(m) != 3 || m[1]["role"] != "assistant" || m[2]["role"] != "tool" || m[2]["tool_call_id"] != "call_1" {
		t.Fatalf("second request messages %v", m)
	}
	if r.rec.count(ToolCallSucceeded) != 1 || r.rec.count(ModelTurnCompleted) != 2 {
		t.Fatalf("observations %v", r.rec.lines())
	}
}

func TestWire_IterationCap(t *testing.T) {
	for _, c := range []struct {
		name   string
		fm     string
		limits Limits
		want   int
	}{
		{"frontmatter", "---\nname: t\ndescription: d\npromptforge: 1\nmax_tool_iterations: 3\n---\n", Limits{}, 3},
		{"configured default", "", Limits{MaxToolIterations: 2}, 2},
		{"runtime default", "", Limits{}, DefaultMaxToolIterations},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGW(t)
			g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return callSearch("again") })
			cfg := g.cfg()
			cfg.Tools = []tools.Tool{searchTool()}
			cfg.Limits = c.limits
			r := runP(t, parse(t, searchPrompt(t, c.fm)), "", cfg)
			r.fails(t, KindTool, "tool-call loop did not converge")
			if n := len(g.Requests()); n != c.want || r.Turns != c.want {
				t.Fatalf("requests %d turns %d, want %d", n, r.Turns, c.want)
			}
		})
	}
}

func TestWire_UnknownAndFailingTools(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "nosuch"}))
	cfg := g.cfg()
	cfg.Tools = []tools.Tool{searchTool()}
	r := runP(t, parse(t, searchPrompt(t, "")), "", cfg)
	r.fails(t, KindTool, `tool "nosuch" is not in this section's scope; in-scope aliases: [search]`)
	if r.rec.count(ToolCallFailed) != 1 {
		t.Fatalf("observations %v", r.rec.lines())
	}

	cause := errors.New("backend exploded")
	failing := searchTool()
	failing.fn = func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{}, cause }
	g.Enqueue(callSearch("x"))
	cfg.Tools = []tools.Tool{failing}
	r = runP(t, parse(t, searchPrompt(t, "")), "", cfg)
	e := r.fails(t, KindTool, "tool call failure: backend exploded")
	if !errors.Is(e, cause) {
		t.Fatal("inner cause lost")
	}
	lines := r.rec.lines()
	if r.rec.count(ToolCallFailed) != 1 || !strings.HasSuffix(lines[len(lines)-1], "Run failed") {
		t.Fatalf("observations %v", lines)
	}
}

// The server's own reason reaches the error (issue 10: it is often the only
// place the real cause is named), but never the API key it may echo, nor
// the prompt's prose.
func TestWire_FailedTurnLeaksNothing(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Status(500, `{"error":"upstream exploded; sent Authorization: Bearer `+g.APIKey()+` key `+g.APIKey()+`"}`))
	r := runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\nSecret prose input.\n"), "", g.cfg())
	e := r.fails(t, KindCompletion, "500")
	if !e.Retryable() {
		t.Fatal("5xx should be retryable")
	}
	if !strings.Contains(e.Error(), `the model server said: "upstream exploded; sent Authorization: Bearer [redacted] key [redacted]"`) {
		t.Errorf("the server's reason is missing: %q", e)
	}
	for _, s := range append(r.rec.lines(), e.Error()) {
		if strings.Contains(s, "Secret prose") || strings.Contains(s, g.APIKey()) {
			t.Fatalf("leak in %q", s)
		}
	}
	if r.rec.count(ModelTurnFailed) != 1 {
		t.Fatalf("observations %v", r.rec.lines())
	}
}

func TestWire_EmptyTurns(t *testing.T) {
	cases := []struct {
		name    string
		replies []gatewaytest.Reply
		want    string
		fail    bool
		trunc   int
	}{
		{"empty final text fails", []gatewaytest.Reply{gatewaytest.Empty("stop")}, "empty model reply", true, 0},
		{"length reports truncation", []gatewaytest.Reply{gatewaytest.TextFinish("cut", "length")}, "cut", false, 1},
		{"empty truncated fails without report", []gatewaytest.Reply{gatewaytest.Empty("length")}, "empty model reply", true, 0},
		{"empty stop after a tool call is clean", []gatewaytest.Reply{callSearch("q"), gatewaytest.Empty("stop")}, "", false, 0},
		{"empty without finish after a tool call fails", []gatewaytest.Reply{callSearch("q"), gatewaytest.Empty("")}, "empty model reply", true, 0},
		{"empty length after a tool call fails", []gatewaytest.Reply{callSearch("q"), gatewaytest.Empty("length")}, "empty model reply", true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGW(t)
			g.Enqueue(c.replies...)
			cfg := g.cfg()
			cfg.Tools = []tools.Tool{searchTool()}
			body := header + "# T\n\n" + needSearch + "\n## A\n\n" + lua(`tools.add("search")`) + "\nGo.\n\n" +
				lua(`return "[" .. reply .. "]" .. sys.reply_finish_reason`)
			r := runP(t, parse(t, body), "", cfg)
			if c.fail {
				r.fails(t, KindCompletion, c.want)
			} else {
				finish := "stop"
				if c.trunc > 0 {
					finish = "length"
				}
				r.ok(t, "["+c.want+"]"+finish)
			}
			if got := r.rec.count(ModelTurnTruncated); got != c.trunc {
				t.Fatalf("truncation reports %d, want %d", got, c.trunc)
			}
		})
	}
}

func TestWire_UntrustedGuard(t *testing.T) {
	g := newGW(t)
	trusted := fetchTool()
	trusted.trusted = true
	search := searchTool()
	body := header + "# T\n\n" + lua(`tools.need("search", "Search the web and return a list of results (title, url, description).")
tools.need("fetch", "Fetch a web page and return its main content as markdown.")
models.default("writer", "A general assistant model")`) + "\n## A\n\n" + lua(`tools.add({"search", "fetch"})`) + "\nGo.\n"
	cfg := g.cfg()
	cfg.Tools = []tools.Tool{search, trusted}
	nonces := map[string]bool{}
	for range 2 {
		g.Enqueue(callSearch("1"), callSearch("2"), gatewaytest.Calls(gatewaytest.Call{Name: "fetch", Args: map[string]any{"url": "u"}}), gatewaytest.Text("done"))
		runP(t, parse(t, body), "", cfg).ok(t, "done")
		reqs := g.Requests()
		last := reqs[len(reqs)-1].Messages
		var wrapped []string
		for _, m := range last {
			if m["role"] == "tool" {
				wrapped = append(wrapped, m["content"].(string))
			}
		}
		if len(wrapped) != 3 {
			t.Fatalf("tool messages %v", wrapped)
		}
		n1 := nonceOf(wrapped[0])
		if n1 == "" || nonceOf(wrapped[1]) != n1 {
			t.Fatalf("nonce not stable across rounds: %q %q", wrapped[0], wrapped[1])
		}
		if wrapped[2] != `result of web_fetch {"url":"u"}` {
			t.Fatalf("trusted result changed: %q", wrapped[2])
		}
		nonces[n1] = true
	}
	if len(nonces) != 2 {
		t.Fatal("two runs shared a nonce")
	}
}

func nonceOf(s string) string {
	const p = "The text inside the untrusted_input_"
	if !strings.HasPrefix(s, p) || len(s) < len(p)+32 {
		return ""
	}
	return s[len(p) : len(p)+32]
}

func TestWire_GemmaEcho(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("```tool_code\nsearch(query=\"x\")\n```"), gatewaytest.Text("final"))
	cfg := g.cfg()
	gemma := testModel
	gemma.Dialect = gateway.DialectGemma3
	cfg.Models = []gateway.Model{gemma}
	cfg.Tools = []tools.Tool{searchTool()}
	runP(t, parse(t, searchPrompt(t, "")), "", cfg).ok(t, "final")
	m := g.Requests()[1].Messages
	last := m[len(m)-1]
	if last["role"] != "user" || !strings.Contains(last["content"].(string), "TOOL RESULT search (call_tool_code_0):") {
		t.Fatalf("gemma echo %v", m)
	}
	if a := m[len(m)-2]; a["role"] != "assistant" || !strings.Contains(a["content"].(string), "```tool_code") {
		t.Fatalf("gemma assistant turn %v", a)
	}
}

func TestWire_OptionsReachTheWire(t *testing.T) {
	g := newGW(t)
	g.SetModels()
	g.Enqueue(gatewaytest.Text("ok"))
	cfg := g.cfg()
	sw := testModel
	sw.Thinking = gateway.ThinkingSwitchable
	cfg.Models = []gateway.Model{sw}
	p := parse(t, "# T\n\n"+lua(`models.default("w", "A general assistant model", {temperature = 0.5, max_tokens = 64, thinking = true})`)+"\n## A\n\nHi.\n")
	runP(t, p, "", cfg).ok(t, "ok")
	b := g.Requests()[0].Body
	if b["model"] != "test-model" || b["temperature"] != 0.5 || b["max_tokens"] != float64(64) {
		t.Fatalf("body %v", b)
	}
	if kw, _ := b["chat_template_kwargs"].(map[string]any); kw["enable_thinking"] != true {
		t.Fatalf("thinking not sent: %v", b)
	}
	if _, ok := b["tools"]; ok {
		t.Fatal("tools sent with no tool in scope")
	}
}

// A model's own thinking_switch decides how the switch is sent.
func TestWire_ModelThinkingSwitch(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("ok"))
	cfg := g.cfg()
	sw := testModel
	sw.Thinking, sw.ThinkingSwitch = gateway.ThinkingSwitchable, gateway.ThinkingSwitchReasoningEffort
	cfg.Models = []gateway.Model{sw}
	p := parse(t, "# T\n\n"+lua(`models.default("w", "A general assistant model", {thinking = false})`)+"\n## A\n\nHi.\n")
	runP(t, p, "", cfg).ok(t, "ok")
	b := g.Requests()[0].Body
	if _, kw := b["chat_template_kwargs"]; kw || b["reasoning_effort"] != "none" {
		t.Fatalf("body %v, want reasoning_effort none and no chat_template_kwargs", b)
	}
}

func TestWire_MalformedReply(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Malformed(`{"choices": "nope"`))
	r := runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\nHi.\n"), "", g.cfg())
	e := r.fails(t, KindCompletion, "malformed")
	if !e.Retryable() {
		t.Fatal("malformed replies are retryable")
	}
}

func TestWire_HangPastClientTimeout(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Hang())
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey()), Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	cfg := g.cfg()
	cfg.Client = c
	r := runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\nHi.\n"), "", cfg)
	e := r.fails(t, KindCompletion, "")
	if !e.Retryable() || e.Cancelled() {
		t.Fatalf("timeout error %v: retryable %v cancelled %v", e, e.Retryable(), e.Cancelled())
	}
}

// With no client the host configured none: Lua-only prompts run, and a
// model call fails saying what to set. The engine never reads the process
// environment for a client, even when it names a working gateway.
func TestWire_NoClientMeansNoGateway(t *testing.T) {
	g := newGW(t)
	t.Setenv(gateway.EnvURL, g.URL())
	t.Setenv(gateway.EnvAPIKey, g.APIKey())
	runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`return "no model needed"`)), "", Options{Models: []gateway.Model{testModel}}).ok(t, "no model needed")
	r := runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\nHi.\n"), "", Options{Models: []gateway.Model{testModel}})
	e := r.fails(t, KindCompletion, gateway.EnvURL)
	if !errors.Is(e, gateway.ErrNotConfigured) || !strings.Contains(e.Error(), "[gateway]") {
		t.Errorf("no-client failure %q should wrap ErrNotConfigured and name both settings", e)
	}
	if n := len(g.Requests()); n != 0 {
		t.Errorf("%d requests reached the gateway the environment names", n)
	}
}

// Cancellation.

func runCtx(ctx context.Context, t *testing.T, body string, cfg Options) (Result, error) {
	t.Helper()
	return Run(ctx, parse(t, body), "", store.New(), cfg)
}

func wantCancelled(t *testing.T, err error, cause string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !e.Cancelled() || e.Kind != KindCancelled {
		t.Fatalf("error %T %v is not a cancellation", err, err)
	}
	if !strings.Contains(e.Error(), cause) {
		t.Fatalf("cancellation %q does not name the cause %q", e, cause)
	}
}

func TestCancel_PreCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the caller cancelled the call"))
	_, err := runCtx(ctx, t, "# T\n\n## A\n\n"+lua(`return 1`), Options{})
	wantCancelled(t, err, "the caller cancelled the call")
}

func TestCancel_MidModelCall(t *testing.T) {
	g := newGW(t)
	gate := gatewaytest.NewGate()
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("too late")))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	rec := &recorder{}
	cfg := g.cfg()
	cfg.Observer = rec
	done := make(chan error, 1)
	go func() {
		_, err := runCtx(ctx, t, "# T\n\n"+defaultModel+"\n## A\n\nHi.\n", cfg)
		done <- err
	}()
	<-gate.Arrived()
	cancel(errors.New("the caller cancelled the call"))
	wantCancelled(t, <-done, "the caller cancelled the call")
	if rec.count(ModelTurnFailed) != 0 || rec.count(RunFailed) != 1 {
		t.Fatalf("observations %v", rec.lines())
	}
}

func TestCancel_MidToolCall(t *testing.T) {
	g := newGW(t)
	g.Enqueue(callSearch("slow"))
	started := make(chan struct{})
	slow := searchTool()
	slow.fn = func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		close(started)
		<-ctx.Done()
		return tools.Result{}, ctx.Err()
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cfg := g.cfg()
	cfg.Tools = []tools.Tool{slow}
	done := make(chan error, 1)
	go func() {
		_, err := runCtx(ctx, t, searchPrompt(t, ""), cfg)
		done <- err
	}()
	<-started
	cancel(errors.New("the caller cancelled the call"))
	wantCancelled(t, <-done, "the caller cancelled the call")
}

func TestCancel_MidLuaLoop(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	started := make(chan struct{})
	cfg := Options{Observer: ObserverFunc(func(e Event) {
		if e.Detail == DetailLua {
			close(started)
		}
	})}
	done := make(chan error, 1)
	go func() {
		_, err := runCtx(ctx, t, "# T\n\n## A\n\n"+lua(`log("spinning") while true do end`), cfg)
		done <- err
	}()
	<-started
	cancel(errors.New("the caller cancelled the call"))
	wantCancelled(t, <-done, "the caller cancelled the call")
}

func TestCancel_MidExecuteChainInfer(t *testing.T) {
	g := newGW(t)
	gate := gatewaytest.NewGate()
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("late")))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	rec := &recorder{}
	cfg := g.cfg()
	cfg.Observer = rec
	done := make(chan error, 1)
	go func() {
		_, err := runCtx(ctx, t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`local ok = pcall(execute, "## B"); return "swallowed " .. tostring(ok)`)+
			"\n## B\n\n---\n\n"+lua(`return models.infer("hi")`), cfg)
		done <- err
	}()
	<-gate.Arrived()
	cancel(errors.New("stop now"))
	wantCancelled(t, <-done, "stop now")
	// prompt-language §3.9, §8.5: a cancelled infer is not a failed model turn.
	if n := rec.count(ModelTurnFailed); n != 0 {
		t.Fatalf("%d failed turns reported: %v", n, rec.lines())
	}
}
