package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/store"
	"github.com/promptforge-go/promptforge/internal/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const header = "---\nname: t\ndescription: A test prompt.\npromptforge: 1\n---\n"

// parse parses a prompt body (the frontmatter header is added unless the
// body starts with its own).
func parse(t testing.TB, body string) *prompt.Prompt {
	t.Helper()
	src := body
	if !strings.HasPrefix(body, "---") {
		src = header + body
	}
	p, err := prompt.Parse([]byte(src))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return p
}

// eventLog keeps every event it is handed: as a recorder, an Observer's;
// as a traceRecorder, a Tracer's.
type eventLog[E any] struct {
	mu     sync.Mutex
	events []E
}

func (r *eventLog[E]) Observe(e E) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// recorder is an Observer that keeps every event.
type recorder struct{ eventLog[Event] }

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i] = e.Section + ": " + e.String()
	}
	return out
}

func (r *recorder) count(d Detail) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Detail == d {
			n++
		}
	}
	return n
}

func (r *recorder) logs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Detail == DetailLua {
			out = append(out, e.Message)
		}
	}
	return out
}

// gw is a gatewaytest server plus a client for it.
type gw struct {
	*gatewaytest.Server
	client *gateway.Client
}

func newGW(t testing.TB) *gw {
	t.Helper()
	s := gatewaytest.New(t)
	c, err := gateway.New(gateway.Options{BaseURL: s.URL(), APIKey: secret.MustNew(s.APIKey())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return &gw{Server: s, client: c}
}

var testModel = gateway.Model{ID: "test-model", Description: "A general assistant model for tests",
	Context: 32768, Thinking: gateway.ThinkingNever, Dialect: gateway.DialectOpenAI}

// cfg returns the Options that reach g with the default catalog.
func (g *gw) cfg() Options {
	return Options{Client: g.client, Models: []gateway.Model{testModel}}
}

// defaultModel is an H1 that declares the test model as default.
const defaultModel = "```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n"

type result struct {
	Result
	err error
	st  *store.Store
	rec *recorder
}

func runP(t testing.TB, p *prompt.Prompt, args string, cfg Options) result {
	t.Helper()
	rec := &recorder{}
	if cfg.Observer == nil {
		cfg.Observer = rec
	}
	st := store.New()
	res, err := Run(context.Background(), p, args, st, cfg)
	return result{Result: res, err: err, st: st, rec: rec}
}

func (r result) ok(t testing.TB, want string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("run failed: %v", r.err)
	}
	if r.Value != want {
		t.Fatalf("value = %q, want %q", r.Value, want)
	}
}

func (r result) fails(t testing.TB, kind Kind, want string) *Error {
	t.Helper()
	if r.err == nil {
		t.Fatalf("run succeeded with %q, want a %v error containing %q", r.Value, kind, want)
	}
	var e *Error
	if !errors.As(r.err, &e) {
		t.Fatalf("error %T %v is not *Error", r.err, r.err)
	}
	if e.Kind != kind || !strings.Contains(e.Error(), want) {
		t.Fatalf("error = [%v] %v, want [%v] containing %q", e.Kind, e, kind, want)
	}
	return e
}

// fakeTool is a live tool for tests.
type fakeTool struct {
	id      tools.ID
	desc    string
	params  string
	trusted bool
	mu      sync.Mutex
	calls   []string
	fn      func(ctx context.Context, args json.RawMessage) (tools.Result, error)
}

func (f *fakeTool) Descriptor() tools.Descriptor {
	p := f.params
	if p == "" {
		p = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`
	}
	return tools.Descriptor{ID: f.id, WireName: f.id.Name, Description: f.desc, Parameters: json.RawMessage(p)}
}

func (f *fakeTool) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, string(args))
	f.mu.Unlock()
	if f.fn != nil {
		return f.fn(ctx, args)
	}
	return tools.Result{Text: "result of " + f.id.Name + " " + string(args), Trusted: f.trusted}, nil
}

func searchTool() *fakeTool {
	return &fakeTool{id: tools.ID{Server: "promptforge", Name: "web_search"},
		desc: "Search the web and return a list of results (title, url, description)."}
}

func fetchTool() *fakeTool {
	return &fakeTool{id: tools.ID{Server: "promptforge", Name: "web_fetch"},
		desc:   "Fetch a web page and return its main content as markdown.",
		params: `{"type":"object","properties":{"url":{"type":"string"},"max_chars":{"type":"integer"},"raw":{"type":"boolean"}},"required":["url"]}`}
}

func msgContents(req gatewaytest.Request) []string {
	out := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		c, _ := m["content"].(string)
		out[i], _ = m["role"].(string)
		out[i] += ":" + c
	}
	return out
}

func toolNames(req gatewaytest.Request) []string {
	ts, _ := req.Body["tools"].([]any)
	var out []string
	for _, t := range ts {
		f := t.(map[string]any)["function"].(map[string]any)
		out = append(out, f["name"].(string))
	}
	return out
}

var storeAll = store.Range{}
