package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// call runs one command line with the given environment and returns the
// exit code, stdout and stderr.
func call(t *testing.T, environ map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := environ[k]; return v, ok }
	code := realMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr, lookup)
	return code, stdout.String(), stderr.String()
}

func gatewayEnv(g *gatewaytest.Server) map[string]string {
	return map[string]string{"PROMPTFORGE_GATEWAY_URL": g.URL(), "PROMPTFORGE_GATEWAY_API_KEY": g.APIKey()}
}

func TestRunLuaOnlyExampleNeedsNoGateway(t *testing.T) {
	code, out, errOut := call(t, nil, "run", "../../examples/prompts/text_stats.md", "hello")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if out != "1 word, 5 characters, 1 line\n" {
		t.Fatalf("stdout = %q", out)
	}
}

func TestRunCountsMultibyteCharacters(t *testing.T) {
	code, out, errOut := call(t, nil, "run", "../../examples/prompts/text_stats.md", "héllo wörld\nzwei")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if out != "3 words, 16 characters, 2 lines\n" {
		t.Fatalf("stdout = %q", out)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"run"},
		{"run", "--bogus", "x.md"},
		{"run", "a.md", "b", "c"},
		{"run", "--input"},
		{"run", "not-a-file-name"},
	} {
		code, out, errOut := call(t, nil, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, errOut)
		}
		if out != "" {
			t.Errorf("%q: wrote %q to stdout", args, out)
		}
		if !strings.Contains(errOut, "usage:") {
			t.Errorf("%q: stderr lacks the usage text: %q", args, errOut)
		}
	}
}

func TestDashLeadingArgsAfterDoubleDash(t *testing.T) {
	code, out, errOut := call(t, nil, "run", "../../examples/prompts/text_stats.md", "--", "-x -y")
	if code != exitOK || out != "2 words, 5 characters, 1 line\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func writePrompt(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.md")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunFailuresExitOneWithClearErrors(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"not a prompt", "---\nname: x\ndescription: y\n---\n# T\n", "declares no `promptforge:` version"},
		{"parse error has file:line", "---\nname: x\ndescription: y\npromptforge: 1\n---\n# T\n\n## A\n\n```lua\nreturn (\n```\n", "p.md:11: lua compilation error"},
		{"lua runtime error", "---\nname: x\ndescription: y\npromptforge: 1\n---\n# T\n\n## A\n\n```lua\nerror('boom')\n```\n", "boom"},
		{"model call without gateway", "---\nname: x\ndescription: y\npromptforge: 1\n---\n# T\n\n```lua\nmodels.default('w', 'a writer')\n```\n\n## A\n\nHello\n", "no gateway configured: set PROMPTFORGE_GATEWAY_URL and PROMPTFORGE_GATEWAY_API_KEY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := call(t, nil, "run", writePrompt(t, c.body))
			if code != exitFailure {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, out, errOut)
			}
			if out != "" {
				t.Fatalf("stdout = %q, want nothing", out)
			}
			if !strings.Contains(errOut, c.want) {
				t.Fatalf("stderr %q does not contain %q", errOut, c.want)
			}
		})
	}
}

func TestGatewayEnvMustBeComplete(t *testing.T) {
	path := writePrompt(t, "---\nname: x\ndescription: y\npromptforge: 1\n---\n# T\n\n## A\n\n```lua\nreturn 'ok'\n```\n")
	code, _, errOut := call(t, map[string]string{"PROMPTFORGE_GATEWAY_API_KEY": "k"}, "run", path)
	if code != exitFailure || !strings.Contains(errOut, "PROMPTFORGE_GATEWAY_URL is not") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestRunProseExampleAgainstGateway(t *testing.T) {
	g := gatewaytest.New(t)
	g.Enqueue(gatewaytest.Text("- one\n- two\n- three"))
	code, out, errOut := call(t, gatewayEnv(g), "run", "../../examples/prompts/summarize.md", "Go is a language. It compiles fast.")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if out != "- one\n- two\n- three\n" {
		t.Fatalf("stdout = %q", out)
	}
	reqs := g.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d chat requests, want 1", len(reqs))
	}
	content, _ := reqs[0].Messages[0]["content"].(string)
	if !strings.Contains(content, "text of 7 words") || !strings.HasSuffix(content, "Go is a language. It compiles fast.") {
		t.Fatalf("prompt sent = %q", content)
	}
	if !strings.Contains(errOut, "Model turn completed") {
		t.Fatalf("stderr lacks progress: %q", errOut)
	}
}

func TestRunInputOutputExample(t *testing.T) {
	g := gatewaytest.New(t)
	g.Enqueue(gatewaytest.Text("## Features\n- dark mode\n"))
	dir := t.TempDir()
	in := filepath.Join(dir, "changes.txt")
	os.WriteFile(in, []byte("feat: dark mode\nfix: crash on empty input\nchore: bump deps\n"), 0o644)

	// Without --output the declared output file is the value.
	code, out, errOut := call(t, gatewayEnv(g), "run", "--input", in, "../../examples/prompts/release_notes.md")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if out != "## Features\n- dark mode\n" {
		t.Fatalf("stdout = %q", out)
	}
	sent, _ := g.Requests()[0].Messages[0]["content"].(string)
	for _, want := range []string{"Features: dark mode", "Fixes: crash on empty input", "Other changes: chore: bump deps"} {
		if !strings.Contains(sent, want) {
			t.Errorf("prompt sent lacks %q:\n%s", want, sent)
		}
	}

	// With --output the file is written and the run's own value printed.
	g.Enqueue(gatewaytest.Text("notes"))
	outFile := filepath.Join(dir, "notes.md")
	code, out, errOut = call(t, gatewayEnv(g), "run", "--input", in, "--output", outFile, "../../examples/prompts/release_notes.md")
	if code != exitOK || out != "wrote release-notes.md\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if data, _ := os.ReadFile(outFile); string(data) != "notes" {
		t.Fatalf("output file = %q", data)
	}

	// Input for a prompt that declares none is refused.
	code, _, errOut = call(t, nil, "run", "--input", in, "../../examples/prompts/text_stats.md")
	if code != exitFailure || !strings.Contains(errOut, "declares no input") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestRunToolLoopExample(t *testing.T) {
	g := gatewaytest.New(t)
	g.Enqueue(
		gatewaytest.Calls(gatewaytest.Call{ID: "c1", Name: "convert", Args: map[string]any{"value": 10, "pair": "km_mi"}}),
		gatewaytest.Text("10 km is about 6.21 miles."),
	)
	code, out, errOut := call(t, gatewayEnv(g), "run", "../../examples/prompts/unit_convert.md", "How many miles is 10 km?")
	if code != exitOK || out != "10 km is about 6.21 miles.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	reqs := g.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	tools, _ := reqs[0].Body["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("first request advertises %d tools, want 1 (convert)", len(tools))
	}
	msgs := reqs[1].Messages
	last := msgs[len(msgs)-1]
	if last["role"] != "tool" || last["content"] != "6.2137" || last["tool_call_id"] != "c1" {
		t.Fatalf("tool result echoed as %v", last)
	}
}

func TestVersionAndHelp(t *testing.T) {
	if code, out, _ := call(t, nil, "version"); code != 0 || !strings.HasPrefix(out, "promptforge-mcp-server ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, out, _ := call(t, nil, "--help"); code != 0 || !strings.Contains(out, "usage:") {
		t.Fatalf("help: %d %q", code, out)
	}
}

func TestRunResearchExampleBindsTheLiveTools(t *testing.T) {
	g := gatewaytest.New(t)
	g.EnqueueSearch(gatewaytest.Search(gatewaytest.SearchHit{Title: "Ada Lovelace", URL: "https://example.org/ada", Description: "Mathematician"}))
	g.Enqueue(
		gatewaytest.Calls(gatewaytest.Call{ID: "s1", Name: "search", Args: map[string]any{"query": "Ada Lovelace"}}),
		gatewaytest.Text("Ada Lovelace was a mathematician.\n\nSources: https://example.org/ada"),
	)
	code, out, errOut := call(t, gatewayEnv(g), "run", "../../examples/prompts/research_person.md", "Ada Lovelace")
	if code != exitOK || !strings.HasPrefix(out, "Ada Lovelace was a mathematician.") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := len(g.SearchRequests()); n != 1 {
		t.Fatalf("%d search requests, want 1", n)
	}
	reqs := g.Requests()
	var advertised []string
	for _, tool := range reqs[0].Body["tools"].([]any) {
		advertised = append(advertised, tool.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if strings.Join(advertised, ",") != "search,fetch" {
		t.Fatalf("advertised tools %v, want the prompt's aliases search,fetch", advertised)
	}
	// The search result reaches the model inside the untrusted envelope.
	msgs := reqs[1].Messages
	last, _ := msgs[len(msgs)-1]["content"].(string)
	if !strings.Contains(last, "untrusted_input_") || !strings.Contains(last, "example.org/ada") {
		t.Fatalf("tool result sent as %q", last)
	}
}

func TestRunWithoutGatewayStillHasWebFetch(t *testing.T) {
	// With no gateway, a prompt needing only fetch binds it; one needing
	// search fails at the H1 saying nothing matches.
	fetchOnly := writePrompt(t, "---\nname: x\ndescription: y\npromptforge: 1\n---\n# T\n\n```lua\nlocal h = tools.need('fetch', 'Fetch a web page and return its main content as markdown.')\nreturn h.wire_name\n```\n")
	code, out, errOut := call(t, nil, "run", fetchOnly)
	if code != exitOK || out != "web_fetch\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = call(t, nil, "run", "../../examples/prompts/research_person.md", "Ada")
	if code != exitFailure || !strings.Contains(errOut, "no tool matches capability") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
