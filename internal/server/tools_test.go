package server

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

var update = flag.Bool("update", false, "rewrite testdata/tools_list.golden.json")

// listTools reads tools/list as a client sees it, raw, so key order and
// every field are compared as sent.
func listToolsRaw(t *testing.T, h *harness, cursor string) []byte {
	t.Helper()
	res, err := h.session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToolsListGolden(t *testing.T) {
	h := newHarness(t, fixture{})
	got, err := json.MarshalIndent(map[string]any{"tools": h.srv.Tools()}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "tools_list.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the golden file (regenerate with -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tools/list differs from %s (regenerate with -update if intended):\n%s", path, got)
	}

	// What a client receives is the same list, in the same order.
	var golden struct{ Tools []map[string]any }
	if err := json.Unmarshal(want, &golden); err != nil {
		t.Fatal(err)
	}
	var received []map[string]any
	if err := json.Unmarshal(listToolsRaw(t, h, ""), &received); err != nil {
		t.Fatal(err)
	}
	if !mapsEqual(map[string]any{"t": golden.Tools}, map[string]any{"t": received}) {
		t.Fatalf("client received\n%v\nwant\n%v", received, golden.Tools)
	}
}

func TestToolsListOrderAndSchemas(t *testing.T) {
	h := newHarness(t, fixture{})
	var names []string
	for _, tool := range h.srv.Tools() {
		names = append(names, tool.Name)
		var schema map[string]any
		if err := json.Unmarshal(tool.InputSchema.(json.RawMessage), &schema); err != nil {
			t.Fatal(err)
		}
		if schema["additionalProperties"] != false || schema["type"] != "object" {
			t.Errorf("%s: schema %v lacks additionalProperties:false", tool.Name, schema)
		}
		for pname, p := range schema["properties"].(map[string]any) {
			// Every parameter is a string but run_prompt's typed
			// arguments, an object (prompt-language §2.1), and
			// check_run's include_trace switch.
			want := "string"
			switch {
			case tool.Name == ToolRunPrompt && pname == "arguments":
				want = "object"
			case tool.Name == ToolCheckRun && pname == "include_trace":
				want = "boolean"
			}
			if p.(map[string]any)["type"] != want {
				t.Errorf("%s.%s is not a %s", tool.Name, pname, want)
			}
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no outputSchema", tool.Name)
		}
		if tool.Name == ToolRunPrompt {
			if req, _ := json.Marshal(schema["required"]); string(req) != `["prompt"]` {
				t.Errorf("run_prompt requires %s, want [\"prompt\"]", req)
			}
		}
	}
	if !slices.Equal(names, []string{ToolListPrompts, ToolRunPrompt, ToolNeedPrompt, ToolCheckRun}) {
		t.Fatalf("tools/list order %v", names)
	}
	off := newHarness(t, fixture{catalog: catalog.Options{NoRetrieval: true}})
	names = names[:0]
	for _, tool := range off.srv.Tools() {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{ToolListPrompts, ToolRunPrompt, ToolCheckRun}) {
		t.Fatalf("without retrieval tools/list is %v", names)
	}
}

func TestToolsListPagination(t *testing.T) {
	h := newHarness(t, fixture{})
	res, err := h.session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2 || res.Tools[0].Name != ToolNeedPrompt || res.NextCursor != "" {
		t.Fatalf("page at 2: %d tools, first %q, next %q", len(res.Tools), res.Tools[0].Name, res.NextCursor)
	}
	res, err = h.session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "9"})
	if err != nil || len(res.Tools) != 0 {
		t.Fatalf("past the end: %v, %v", res, err)
	}
	_, err = h.session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "x1"})
	we := wireError(t, err)
	if we.Code != jsonrpc.CodeInvalidParams || we.Message != `cursor "x1" is not a valid pagination cursor` {
		t.Fatalf("bad cursor: %d %q", we.Code, we.Message)
	}
}

// The list never depends on the catalog, even one whose prompts are named
// like the built-ins (one of them broken).
func TestToolsListIgnoresTheCatalog(t *testing.T) {
	h := newHarness(t, fixture{})
	before := listToolsRaw(t, h, "")
	servertest.WriteTree(t, h.dir, map[string]string{
		"run_prompt.md": luaPrompt("run_prompt", "Shadow a built-in.", "return 1"),
		"lister.md":     luaPrompt("list_prompts", "Shadow another.", "return 1"),
	})
	out, err := h.handle.Reload(context.Background(), func(context.Context) (catalog.Settings, []string, error) {
		return catalog.Settings{Roots: []string{h.dir}, Include: []string{"**/*.md"}}, nil, nil
	})
	if err != nil || !out.Published || out.Broken != 2 {
		t.Fatalf("reload: %+v %v", out, err)
	}
	if after := listToolsRaw(t, h, ""); !bytes.Equal(before, after) {
		t.Fatalf("tools/list changed with the catalog:\n%s\nvs\n%s", before, after)
	}
}

// bannedPhrases are trigger phrases mcp-server §4.3 keeps out of every
// description, schema text and the instructions: they read as standing
// orders to a model instead of documentation.
var bannedPhrases = []string{
	"use this when", "use when", "whenever you", "if you need", "you should",
	"helpful", "useful", "anytime", "proactively",
}

func TestWordingConstraints(t *testing.T) {
	h := newHarness(t, fixture{})
	texts := map[string]string{"instructions": instructions}
	for _, tool := range h.srv.Tools() {
		texts[tool.Name] = tool.Description
		texts[tool.Name+" schema"] = string(tool.InputSchema.(json.RawMessage))
	}
	for where, text := range texts {
		lower := strings.ToLower(text)
		for _, banned := range bannedPhrases {
			if strings.Contains(lower, banned) {
				t.Errorf("%s contains %q", where, banned)
			}
		}
	}
	for _, name := range []string{ToolRunPrompt, ToolCheckRun} {
		if !strings.Contains(texts[name], valueSentence) {
			t.Errorf("%s lacks the prompt-value sentence", name)
		}
	}
	for _, want := range []string{"executes PromptForge prompts", "names one", valueSentence} {
		if !strings.Contains(instructions, want) {
			t.Errorf("instructions lack %q", want)
		}
	}
	var need struct {
		Properties map[string]struct{ Description string }
	}
	for _, tool := range h.srv.Tools() {
		if tool.Name == ToolNeedPrompt {
			json.Unmarshal(tool.InputSchema.(json.RawMessage), &need)
		}
	}
	for _, text := range []string{texts[ToolNeedPrompt], need.Properties["capability"].Description} {
		for _, want := range []string{capabilityRegister, "Build a stakeholder position report for one entity.", "Herb Sutter"} {
			if !strings.Contains(text, want) {
				t.Errorf("need_prompt text %q lacks %q", text, want)
			}
		}
	}
}

// Each built-in name is dispatchable exactly when it is published. (That
// every one is reserved for prompts is package names' rule; the server's
// constants are its names.)
func TestBuiltinsDispatchedWhenPublished(t *testing.T) {
	names := []string{ToolListPrompts, ToolRunPrompt, ToolNeedPrompt, ToolCheckRun}
	for _, noRetrieval := range []bool{false, true} {
		h := newHarness(t, fixture{catalog: catalog.Options{NoRetrieval: noRetrieval}})
		published := map[string]bool{}
		for _, tool := range h.srv.Tools() {
			published[tool.Name] = true
		}
		for _, n := range names {
			_, err := h.call(n, map[string]any{"nothing": "x"})
			we := wireError(t, err)
			dispatched := strings.Contains(we.Message, "takes no argument")
			if dispatched != published[n] {
				t.Errorf("retrieval off=%v: %s dispatched %v, published %v (%q)", noRetrieval, n, dispatched, published[n], we.Message)
			}
		}
	}
}

// Tools without listChanged (no [catalog].tools), and prompts with it:
// every catalog prompt is an MCP prompt, and the catalog reloads.
func TestInitializeAdvertisesToolsAndPrompts(t *testing.T) {
	h := newHarness(t, fixture{})
	init := h.session.InitializeResult()
	if init.ServerInfo.Name != ServerName || init.ServerInfo.Version != "test" {
		t.Fatalf("serverInfo %+v", init.ServerInfo)
	}
	caps, _ := json.Marshal(init.Capabilities)
	if string(caps) != `{"extensions":{"io.modelcontextprotocol/tasks":{}},"prompts":{"listChanged":true},"tools":{}}` {
		t.Fatalf("capabilities %s, want tools without listChanged, prompts with it, and the Tasks extension", caps)
	}
	if init.Instructions != instructions {
		t.Fatalf("instructions %q", init.Instructions)
	}
}
