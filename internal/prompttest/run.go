package prompttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/store"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// Options configure Run.
type Options struct {
	// Files are the test files to run (see Find).
	Files []string
	// Run, when set, selects the tests whose "<prompt file stem>/<test
	// name>" it matches, as go test -run does.
	Run *regexp.Regexp
	// Update records each selected test's current value, error and store
	// as its expectations, rewriting its file, instead of checking them.
	Update bool
	// Verbose also reports the tests that pass.
	Verbose bool
	// Out receives the report.
	Out io.Writer
}

// Summary counts the tests Run ran.
type Summary struct {
	Passed, Failed int
}

// Run runs every selected test of opts.Files and reports on opts.Out like
// go test: a block per failing test with what differs, a line per file
// and a last line "N passed, M failed". The error is a file that could
// not be loaded or updated, or a prompt that does not parse; a test that
// fails, or cannot be set up, is counted and reported.
func Run(ctx context.Context, opts Options) (Summary, error) {
	var sum Summary
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	for _, path := range opts.Files {
		f, err := Load(path)
		if err != nil {
			return sum, err
		}
		p, err := loadPrompt(f.PromptPath())
		if err != nil {
			return sum, fmt.Errorf("%s: %w", path, err)
		}
		stem := strings.TrimSuffix(filepath.Base(f.PromptPath()), ".md")
		passed, failed, ran := 0, 0, 0
		for i := range f.Tests {
			t := &f.Tests[i]
			full := stem + "/" + t.Name
			if opts.Run != nil && !opts.Run.MatchString(full) {
				continue
			}
			ran++
			var problems []string
			got, err := runOne(ctx, f, p, t)
			switch {
			case err != nil:
				// The test itself is wrong (its arguments, its input): a
				// failure of this test, not of the others.
				problems = []string{"the test cannot run: " + err.Error()}
			case opts.Update:
				got.record(t)
				fallthrough
			default:
				problems = got.check(t)
			}
			if len(problems) == 0 {
				passed++
				if opts.Verbose {
					fmt.Fprintf(out, "--- PASS: %s\n", full)
				}
				continue
			}
			failed++
			fmt.Fprintf(out, "--- FAIL: %s (%s)\n", full, path)
			for _, pr := range problems {
				fmt.Fprintf(out, "    %s\n", strings.ReplaceAll(strings.TrimRight(pr, "\n"), "\n", "\n    "))
			}
		}
		if opts.Update && ran > 0 {
			if err := f.save(); err != nil {
				return sum, err
			}
		}
		sum.Passed += passed
		sum.Failed += failed
		switch {
		case ran == 0:
			fmt.Fprintf(out, "ok   %s [no tests to run]\n", path)
		case failed > 0:
			fmt.Fprintf(out, "FAIL %s (%d of %d failed)\n", path, failed, ran)
		case opts.Update:
			fmt.Fprintf(out, "ok   %s (%d recorded)\n", path, ran)
		default:
			fmt.Fprintf(out, "ok   %s (%d passed)\n", path, ran)
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", sum.Passed, sum.Failed)
	return sum, nil
}

// loadPrompt reads and parses the prompt a test file names.
func loadPrompt(path string) (*prompt.Prompt, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the prompt under test (set `prompt:` if it is not the test file's stem with .md): %w", err)
	}
	p, err := prompt.Parse(src)
	if err != nil {
		var pe *prompt.ParseError
		if errors.As(err, &pe) && pe.Line > 0 {
			return nil, fmt.Errorf("%s:%d: %w", path, pe.Line, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// outcome is what one run produced.
type outcome struct {
	value    string
	err      string // "" for success
	store    map[string]string
	requests []gatewaytest.Request
	replies  int // scripted
	// toolsLeft are scripted tool results no call took, by alias.
	toolsLeft map[string]int
}

// runOne runs t on a scripted gateway of its own. The error is a test
// that cannot be set up (a bad input_file, arguments the prompt refuses),
// which Run reports as that test's failure; what the run did, failure
// included, is the outcome.
func runOne(ctx context.Context, f *File, p *prompt.Prompt, t *Test) (*outcome, error) {
	gw, err := gatewaytest.NewServer(gatewaytest.ServerOptions{})
	if err != nil {
		return nil, err
	}
	defer gw.Close()
	replies, err := scriptReplies(t.Replies)
	if err != nil {
		return nil, err
	}
	gw.Enqueue(replies...)
	transport := gateway.NewTransport()
	defer transport.CloseIdleConnections()
	client, err := gateway.New(gateway.Options{
		BaseURL:    gw.URL(),
		APIKey:     secret.MustNew(gw.APIKey()),
		HTTPClient: &http.Client{Transport: transport},
	})
	if err != nil {
		return nil, err
	}
	scripted := newScriptedTools(t.Tools)
	models := make([]gateway.Model, 0, len(t.Models))
	for _, m := range t.Models {
		models = append(models, gateway.Model{ID: m.ID, Description: m.Description, Context: 32768, Thinking: gateway.ThinkingNever})
	}
	if len(t.Models) == 0 {
		models = scripted.satisfy(ctx, p, models)
	} else {
		scripted.satisfy(ctx, p, models)
	}
	entries := make([]map[string]any, len(models))
	for i, m := range models {
		entries[i] = map[string]any{"id": m.ID, "object": "model", "description": m.Description, "context": m.Context, "thinking": string(m.Thinking)}
	}
	gw.SetModels(entries...)
	cat, err := client.Models(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list the scripted models: %w", err)
	}
	bound, err := bindArgs(p, t)
	if err != nil {
		return nil, err
	}
	st := store.New()
	if err := seed(st, p, f, t); err != nil {
		return nil, err
	}
	res, runErr := engine.Run(ctx, p, bound.Args, st, engine.Options{
		Client: client,
		Models: cat.Models,
		Tools:  scripted.list(),
		Params: bound.Params,
		// One arm at a time: scripted replies are taken in arrival order,
		// so concurrent arms would make a test flaky.
		Limits: engine.Limits{FanoutConcurrency: 1},
	})
	o := &outcome{value: res.Value, store: st.Snapshot(), requests: gw.Requests(), replies: len(replies), toolsLeft: scripted.left()}
	if runErr != nil {
		o.err = runErr.Error()
		return o, nil
	}
	// The value `run` prints: the declared output's content when produced.
	if out, err := engine.ExtractDeclaredOutput(st, p); err == nil && out.Produced {
		o.value = out.Content
	}
	return o, nil
}

// scriptReplies turns the test's replies into the gateway's.
func scriptReplies(rs []Reply) ([]gatewaytest.Reply, error) {
	out := make([]gatewaytest.Reply, 0, len(rs))
	for _, r := range rs {
		switch {
		case r.Text != nil:
			out = append(out, gatewaytest.Text(*r.Text))
		case len(r.Calls) > 0:
			calls := make([]gatewaytest.Call, len(r.Calls))
			for i, c := range r.Calls {
				calls[i] = gatewaytest.Call{Name: c.Name, Args: c.Args}
			}
			out = append(out, gatewaytest.Calls(calls...))
		default:
			out = append(out, gatewaytest.Status(r.Status, r.Body))
		}
	}
	return out, nil
}

// bindArgs is the test's args or typed params, by the rules of run_prompt.
func bindArgs(p *prompt.Prompt, t *Test) (prompt.Bound, error) {
	decl := p.Frontmatter.Arguments
	if decl == nil {
		if t.Params != nil {
			return prompt.Bound{}, errors.New("the test sets params but the prompt declares no `arguments:`; use args")
		}
		return prompt.Bound{Args: t.Args}, nil
	}
	if t.Args != "" {
		return prompt.Bound{}, fmt.Errorf("the prompt takes typed arguments (%s): set params, not args", prompt.DescribeArguments(decl))
	}
	return prompt.Bind(p.Frontmatter.Name, decl, t.Params, false)
}

// seed puts the test's input at the prompt's declared input path.
func seed(st *store.Store, p *prompt.Prompt, f *File, t *Test) error {
	if t.Input == nil && t.InputFile == "" {
		return nil
	}
	err := engine.SeedDeclaredInput(st, p, func() (string, error) {
		if t.Input != nil {
			return *t.Input, nil
		}
		data, err := os.ReadFile(filepath.Join(filepath.Dir(f.Path), t.InputFile))
		if err != nil {
			return "", fmt.Errorf("read input_file: %w", err)
		}
		if !utf8.Valid(data) {
			return "", fmt.Errorf("input_file %s is not UTF-8 text", t.InputFile)
		}
		return string(data), nil
	})
	if errors.Is(err, engine.ErrInputUndeclared) {
		return errors.New("the test gives input but the prompt declares no input; drop it or declare `input:` in the frontmatter")
	}
	return err
}

// record makes the outcome the test's expectations (-update).
func (o *outcome) record(t *Test) {
	if o.err != "" {
		t.Expect.Error, t.Expect.Value = &o.err, nil
	} else {
		v := o.value
		t.Expect.Value, t.Expect.Error = &v, nil
	}
	t.Expect.Store = nil
	if len(o.store) > 0 {
		t.Expect.Store = o.store
	}
}

// check lists how the outcome differs from t's expectations.
func (o *outcome) check(t *Test) []string {
	var problems []string
	e := t.Expect
	switch {
	case o.err != "" && e.Error == nil:
		problems = append(problems, "the run failed: "+o.err)
	case o.err == "" && e.Error != nil:
		problems = append(problems, fmt.Sprintf("the run succeeded; want an error containing %q", *e.Error))
	case o.err != "" && !strings.Contains(o.err, *e.Error):
		problems = append(problems, "error:\n"+Diff(*e.Error, o.err))
	}
	if e.Value != nil && o.err == "" && *e.Value != o.value {
		problems = append(problems, "value (-want +got):\n"+Diff(*e.Value, o.value))
	}
	if e.Store != nil {
		problems = append(problems, storeDiff(e.Store, o.store)...)
	}
	if n := len(o.requests); n > o.replies {
		problems = append(problems, fmt.Sprintf("the prompt made %d chat requests but the test scripts %d replies: add replies", n, o.replies))
	} else if n < o.replies && o.err == "" {
		problems = append(problems, fmt.Sprintf("only %d of the %d scripted replies were used: remove the rest", n, o.replies))
	}
	for _, alias := range sortedKeys(o.toolsLeft) {
		problems = append(problems, fmt.Sprintf("tool %q: %d scripted results were not used", alias, o.toolsLeft[alias]))
	}
	for _, rc := range e.Requests {
		problems = append(problems, checkRequest(rc, o.requests)...)
	}
	return problems
}

func storeDiff(want, got map[string]string) []string {
	var problems []string
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			problems = append(problems, fmt.Sprintf("store: %s was not written", k))
		case !inWant:
			problems = append(problems, fmt.Sprintf("store: %s was written but is not expected:\n%s", k, Diff("", g)))
		case w != g:
			problems = append(problems, fmt.Sprintf("store: %s (-want +got):\n%s", k, Diff(w, g)))
		}
	}
	return problems
}

func checkRequest(rc RequestCheck, reqs []gatewaytest.Request) []string {
	if rc.Turn < 1 || rc.Turn > len(reqs) {
		return []string{fmt.Sprintf("request %d: the model received %d requests", rc.Turn, len(reqs))}
	}
	req := reqs[rc.Turn-1]
	var problems []string
	for _, s := range rc.Contains {
		found := false
		for _, m := range req.Messages {
			if c, ok := m["content"].(string); ok && strings.Contains(c, s) {
				found = true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("request %d: no message contains %q; its messages:\n%s", rc.Turn, s, messagesText(req)))
		}
	}
	offered := offeredTools(req)
	for _, name := range rc.Tools {
		if !slices.Contains(offered, name) {
			problems = append(problems, fmt.Sprintf("request %d: tool %q was not offered (offered: %s)", rc.Turn, name, strings.Join(offered, ", ")))
		}
	}
	return problems
}

func messagesText(req gatewaytest.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		role, _ := m["role"].(string)
		c, _ := m["content"].(string)
		fmt.Fprintf(&b, "  %s: %s\n", role, strings.ReplaceAll(c, "\n", "\n    "))
	}
	return strings.TrimRight(b.String(), "\n")
}

func offeredTools(req gatewaytest.Request) []string {
	list, _ := req.Body["tools"].([]any)
	var names []string
	for _, t := range list {
		obj, _ := t.(map[string]any)
		fn, _ := obj["function"].(map[string]any)
		if name, ok := fn["name"].(string); ok {
			names = append(names, name)
		}
	}
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// scriptedTools are the live tools of a test: one per tool need, each
// answering its scripted results in order.
type scriptedTools struct {
	mu      sync.Mutex
	results map[string][]string
	tools   []tools.Tool
}

func newScriptedTools(results map[string][]string) *scriptedTools {
	r := make(map[string][]string, len(results))
	for k, v := range results {
		r[k] = slices.Clone(v)
	}
	return &scriptedTools{results: r}
}

// maxNeeds bounds the probing in satisfy: a prompt declares a handful.
const maxNeeds = 32

// satisfy probes p's H1 and, for each need that binds to nothing, adds a
// model (to models, returned) or a scripted tool described exactly as the
// need is, until every need binds.
func (s *scriptedTools) satisfy(ctx context.Context, p *prompt.Prompt, models []gateway.Model) []gateway.Model {
	for range maxNeeds {
		res := engine.Probe(ctx, p, engine.Options{Models: models, Tools: s.list()})
		n := res.Failed()
		if n == nil {
			break
		}
		if n.Kind == engine.NeedModel {
			models = append(models, gateway.Model{ID: fmt.Sprintf("scripted-model-%d", len(models)+1), Description: n.Description, Context: 32768, Thinking: gateway.ThinkingNever})
			continue
		}
		if slices.ContainsFunc(s.tools, func(t tools.Tool) bool { return t.Descriptor().ID.Name == n.Alias }) {
			break // added already and still unbound: the run reports it
		}
		s.tools = append(s.tools, &scriptedTool{owner: s, d: tools.Descriptor{
			ID:          tools.ID{Server: "prompttest", Name: n.Alias},
			WireName:    n.Alias,
			Description: n.Description,
			Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
		}})
	}
	return models
}

func (s *scriptedTools) list() []tools.Tool { return slices.Clone(s.tools) }

func (s *scriptedTools) left() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := map[string]int{}
	for k, v := range s.results {
		if len(v) > 0 {
			left[k] = len(v)
		}
	}
	return left
}

type scriptedTool struct {
	owner *scriptedTools
	d     tools.Descriptor
	calls int
}

func (t *scriptedTool) Descriptor() tools.Descriptor { return t.d }

func (t *scriptedTool) Call(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
	s := t.owner
	s.mu.Lock()
	defer s.mu.Unlock()
	t.calls++
	queue := s.results[t.d.ID.Name]
	if len(queue) == 0 {
		return tools.Result{}, fmt.Errorf("the test scripts no result for call %d of tool %q: add one under `tools: {%s: [...]}`", t.calls, t.d.ID.Name, t.d.ID.Name)
	}
	s.results[t.d.ID.Name] = queue[1:]
	return tools.Result{Text: queue[0]}, nil
}
