package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/jsonwire"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

type listed struct {
	NextCursor *string                      `json:"next_cursor"`
	Prompts    []map[string]json.RawMessage `json:"prompts"`
}

func (h *harness) list(cursor string) listed {
	h.t.Helper()
	args := map[string]any{}
	if cursor != "" {
		args["cursor"] = cursor
	}
	res := h.ok(ToolListPrompts, args)
	if res.IsError {
		h.t.Fatalf("list_prompts isError: %+v", res)
	}
	text := textOf(h.t, res)
	// The server's own encoder: it does not escape <, > and & as
	// encoding/json does, and a problem text may hold them.
	body, err := jsonwire.Marshal(res.StructuredContent)
	if err != nil {
		h.t.Fatal(err)
	}
	if text != string(body) {
		h.t.Fatalf("text %s differs from the compact structuredContent %s", text, body)
	}
	var l listed
	if err := json.Unmarshal(body, &l); err != nil {
		h.t.Fatal(err)
	}
	return l
}

func promptNames(l listed) []string {
	var out []string
	for _, p := range l.Prompts {
		var n string
		json.Unmarshal(p["name"], &n)
		out = append(out, n)
	}
	return out
}

func TestListPromptsNamesTheCatalogInOrder(t *testing.T) {
	// With a model summarize's need binds to, every prompt is problem-free.
	h := newHarness(t, fixture{opts: func(o *Options) { o.Models = modelset.Static([]gateway.Model{testModel}) }})
	l := h.list("")
	if got := strings.Join(promptNames(l), ","); got != "echo,explode,greet,summarize" {
		t.Fatalf("names %s", got)
	}
	if l.NextCursor != nil {
		t.Fatalf("next_cursor %q on the only page", *l.NextCursor)
	}
	for _, p := range l.Prompts {
		if string(p["problem"]) != "null" {
			t.Errorf("%s: problem %s, want null", p["name"], p["problem"])
		}
		for key := range p {
			if key != "name" && key != "description" && key != "problem" {
				t.Errorf("%s: unexpected key %q", p["name"], key)
			}
		}
	}
}

func TestListPromptsShowsDeclarationsAndBrokenEntries(t *testing.T) {
	h := newHarness(t, fixture{prompts: map[string]string{
		"good.md": promptFile("good", "Keep working.", "input:\n  path: in.txt\n  description: the text\noutput:\n  path: out.txt\n  description: the result\n",
			"# Good\n\n## Run\n\n```lua\nreturn 'ok'\n```\n"),
	}})
	servertest.WriteTree(t, h.dir, map[string]string{"bad.md": "---\nname: bad\ndescription: x\npromptforge: 1\n---\nno heading\n"})
	if _, err := h.handle.Reload(context.Background(), reloadAll(h.dir)); err != nil {
		t.Fatal(err)
	}
	l := h.list("")
	byName := map[string]map[string]json.RawMessage{}
	for i, n := range promptNames(l) {
		byName[n] = l.Prompts[i]
	}
	if p := byName["bad"]; p == nil || !strings.Contains(string(p["problem"]), "does not parse") || string(p["description"]) != `""` {
		t.Fatalf("broken entry %v", p)
	}
	good := byName["good"]
	if string(good["problem"]) != "null" ||
		string(good["input"]) != `{"description":"the text","path":"in.txt"}` ||
		string(good["output"]) != `{"description":"the result","path":"out.txt"}` {
		t.Fatalf("good entry %v", good)
	}
	// Running the broken entry reports its problem, from a run that was
	// never registered.
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "bad"})
	s := structuredOf(t, res)
	if !res.IsError || s["status"] != "failed" || !strings.Contains(textOf(t, res), "does not parse") || s["turns"] != float64(0) || s["elapsed_ms"] != float64(0) {
		t.Fatalf("broken run: %v", s)
	}
	if _, ok := h.srv.Registry().Check(s["run_id"].(string)); ok {
		t.Fatal("the broken entry's run id is registered")
	}
}

func reloadAll(dir string) catalog.LoadFunc {
	return func(context.Context) (catalog.Settings, []string, error) {
		return catalog.Settings{Roots: []string{dir}, Include: []string{"**/*.md"}}, nil, nil
	}
}

func TestListPromptsPages(t *testing.T) {
	h := newHarness(t, fixture{prompts: numberedPrompts(205, 3)})
	first := h.list("")
	if len(first.Prompts) != 100 || first.NextCursor == nil || *first.NextCursor != "100" {
		t.Fatalf("first page: %d prompts, next %v", len(first.Prompts), first.NextCursor)
	}
	second := h.list(*first.NextCursor)
	if len(second.Prompts) != 100 || promptNames(second)[0] != "p100" || *second.NextCursor != "200" {
		t.Fatalf("second page: %d, first %s", len(second.Prompts), promptNames(second)[0])
	}
	last := h.list("200")
	if len(last.Prompts) != 5 || last.NextCursor != nil {
		t.Fatalf("last page: %d, next %v", len(last.Prompts), last.NextCursor)
	}
	if past := h.list("9999"); len(past.Prompts) != 0 {
		t.Fatalf("past the end: %d", len(past.Prompts))
	}
}

func TestTurnsCount(t *testing.T) {
	g, c := tcpGateway(t)
	g.Enqueue(gatewaytest.Text("spoken"))
	h := newHarness(t, fixture{opts: withGateway(c)})
	s := structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "summarize"}))
	if s["status"] != "completed" || s["value"] != "spoken" || s["turns"] != float64(1) {
		t.Fatalf("prose run: %v", s)
	}
	s = structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"}))
	if s["turns"] != float64(0) {
		t.Fatalf("Lua-only run: %v", s)
	}
}

// A run that fails after a model turn still reports the turn: the record's
// turns are the engine's result, which is set on failure too.
func TestAFailedRunCountsItsTurns(t *testing.T) {
	g, c := tcpGateway(t)
	g.Enqueue(gatewaytest.Text("spoken"))
	h := newHarness(t, fixture{
		prompts: map[string]string{"speak.md": promptFile("speak", "Speak, then fail.", "",
			"# Speak\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nSay something.\n\n## Fail\n\n```lua\nerror(\"after the turn\")\n```\n")},
		opts: withGateway(c),
	})
	res, err := h.call(ToolRunPrompt, map[string]any{"prompt": "speak"})
	if err != nil {
		t.Fatal(err)
	}
	if s := structuredOf(t, res); s["status"] != "failed" || s["turns"] != float64(1) {
		t.Fatalf("failed run: %v", s)
	}
}

func TestInputAndOutput(t *testing.T) {
	const (
		readsInput  = "input:\n  path: in.txt\n  description: the text\n"
		writeOutput = "output:\n  path: out.txt\n  description: the result\n"
	)
	h := newHarness(t, fixture{prompts: map[string]string{
		"echo.md":    luaPrompt("echo", "Return the arguments.", "return args"),
		"reader.md":  promptFile("reader", "Return the input.", readsInput, "# Reader\n\n## Run\n\n```lua\nreturn store.read(\"in.txt\")\n```\n"),
		"writer.md":  promptFile("writer", "Write the output.", writeOutput, "# Writer\n\n## Run\n\n```lua\nstore.write(\"out.txt\", \"produced \" .. args)\nreturn \"returned\"\n```\n"),
		"shirker.md": promptFile("shirker", "Declare output, write none.", writeOutput, "# Shirker\n\n## Run\n\n```lua\nreturn \"nothing written\"\n```\n"),
	}})
	outside := t.TempDir()
	servertest.WriteTree(t, outside, map[string]string{"secret.txt": "secret"})
	servertest.WriteTree(t, h.dir, map[string]string{"notes/input.txt": "from a file"})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(h.dir, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(h.dir, "out-link")); err != nil {
		t.Fatal(err)
	}

	type want struct {
		isError bool
		status  string // "" for a text-only result
		text    string // substring
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want want
	}{
		{"input text seeds the declared path", map[string]any{"prompt": "reader", "input_text": "seeded"}, want{false, "completed", "seeded"}},
		{"input file seeds the declared path", map[string]any{"prompt": "reader", "input_file": filepath.Join(h.dir, "notes/input.txt")}, want{false, "completed", "from a file"}},
		{"input to a prompt that declares none", map[string]any{"prompt": "echo", "input_text": "x"}, want{true, "failed", "declares no input"}},
		{"declared input read but not given", map[string]any{"prompt": "reader"}, want{true, "failed", ""}},
		{"missing input file", map[string]any{"prompt": "reader", "input_file": filepath.Join(h.dir, "nope.txt")}, want{true, "failed", `cannot read input_file "`}},
		{"input file outside the roots", map[string]any{"prompt": "reader", "input_file": filepath.Join(outside, "secret.txt")}, want{true, "", h.dir}},
		{"input symlink escaping the roots", map[string]any{"prompt": "reader", "input_file": filepath.Join(h.dir, "escape.txt")}, want{true, "", "resolves outside"}},
		{"relative climb out of the roots", map[string]any{"prompt": "reader", "input_file": filepath.Join(h.dir, "..", "x.txt")}, want{true, "", "resolves outside"}},
		{"declared output replaces the value", map[string]any{"prompt": "writer", "args": "A"}, want{false, "completed", "produced A"}},
		{"declared output not produced", map[string]any{"prompt": "shirker"}, want{false, "completed", "nothing written\n\n[note: the prompt declares output \"out.txt\" but it was not produced]"}},
		{"output file outside the roots", map[string]any{"prompt": "writer", "output_file": filepath.Join(outside, "o.txt")}, want{true, "", "resolves outside"}},
		{"output file through a symlinked directory", map[string]any{"prompt": "writer", "output_file": filepath.Join(h.dir, "out-link", "o.txt")}, want{true, "", "resolves outside"}},
		{"output file in a missing directory", map[string]any{"prompt": "writer", "output_file": filepath.Join(h.dir, "no/such/dir.txt")}, want{false, "completed", "returned\n\n[note: could not write output to \""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.ok(ToolRunPrompt, tc.args)
			if res.IsError != tc.want.isError {
				t.Fatalf("isError %v, want %v: %q", res.IsError, tc.want.isError, textOf(t, res))
			}
			if tc.want.status == "" {
				if res.StructuredContent != nil {
					t.Fatalf("want a text-only result, got %v", res.StructuredContent)
				}
			} else if s := structuredOf(t, res); s["status"] != tc.want.status {
				t.Fatalf("status %v, want %s", s["status"], tc.want.status)
			}
			if !strings.Contains(textOf(t, res), tc.want.text) {
				t.Fatalf("text %q lacks %q", textOf(t, res), tc.want.text)
			}
		})
	}

	// output_file written inside a root; the value stays the return value.
	target := filepath.Join(h.dir, "result.txt")
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "writer", "args": "B", "output_file": target})
	if res.IsError || textOf(t, res) != "returned" {
		t.Fatalf("output_file run: %q", textOf(t, res))
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "produced B" {
		t.Fatalf("output file holds %q (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "o.txt")); err == nil {
		t.Fatal("a file was written outside the roots")
	}
}

func TestNoFileRootsRefusesEveryPath(t *testing.T) {
	h := newHarness(t, fixture{opts: func(o *Options) { o.FileRoots = nil }})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "input_file": "anything.txt"})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(textOf(t, res), "[paths].files") {
		t.Fatalf("got %+v %q", res, textOf(t, res))
	}
}

// A healthy prompt whose model need binds to nothing is listed with that
// problem and what to do; the probe runs once per prompt per catalog
// generation and model list, only for the page listed.
func TestListPromptsShowsABindingProblem(t *testing.T) {
	writer := "---\nname: %s\ndescription: Write.\npromptforge: 1\n---\n# T\n\n```lua\nmodels.default(\"writer\", \"A model for clear technical prose\"%s)\n```\n\n## A\n\nWrite.\n"
	models := []gateway.Model{testModel}
	h := newHarness(t, fixture{
		prompts: map[string]string{
			"fits.md":   fmt.Sprintf(writer, "fits", ""),
			"toobig.md": fmt.Sprintf(writer, "toobig", ", {context = 1000000}"),
			"chatty.md": "---\nname: chatty\ndescription: Talk first.\npromptforge: 1\n---\n# T\n\nSay hello.\n\n## A\n\nAgain.\n",
			"echo.md":   luaPrompt("echo", "Echo.", "return args"),
		},
		opts: func(o *Options) { o.Models = modelset.Static(models) },
	})
	problems := func() map[string]string {
		out := map[string]string{}
		for _, p := range h.list("").Prompts {
			var name string
			var problem *string
			json.Unmarshal(p["name"], &name)
			json.Unmarshal(p["problem"], &problem)
			if problem != nil {
				out[name] = *problem
			}
		}
		return out
	}
	got := problems()
	want := `needs a model for "writer" (A model for clear technical prose) but no served model matches; describe one in [models."<id>"]`
	if len(got) != 1 || !strings.HasPrefix(got["toobig"], want) {
		t.Fatalf("problems %q", got)
	}
	// Cached for this generation and model list: the same answer, and no
	// new entries.
	if again := problems(); len(again) != 1 || again["toobig"] != got["toobig"] || len(h.srv.problems.found) != 4 {
		t.Fatalf("problems %q, cache %q", again, h.srv.problems.found)
	}
	// A new model list is probed afresh: with none at all, fits has a
	// problem too, and the advice is to pull one.
	h.srv.models = nil
	if got := problems(); len(got) != 2 || !strings.Contains(got["fits"], "ollama pull") {
		t.Fatalf("problems %q", got)
	}
}

// Binding problems are probed for the page listed, not for the catalog.
func TestListPromptsProbesOnlyThePageListed(t *testing.T) {
	files := map[string]string{}
	for i := range listPageSize + 20 {
		name := fmt.Sprintf("p%03d", i)
		files[name+".md"] = luaPrompt(name, "Return one.", "return 1")
	}
	h := newHarness(t, fixture{prompts: files})
	l := h.list("")
	if n := len(h.srv.problems.found); n != listPageSize || l.NextCursor == nil {
		t.Fatalf("%d prompts probed for the first page of %d", n, listPageSize)
	}
	h.list(*l.NextCursor)
	if n := len(h.srv.problems.found); n != listPageSize+20 {
		t.Fatalf("%d prompts probed after both pages", n)
	}
}
