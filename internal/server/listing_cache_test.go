package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// pageFixture is a catalog with every kind of list_prompts entry: more
// than a page (a next_cursor), broken prompts, typed arguments with and
// without defaults, declared input and output, a binding problem, and
// text encoding/json escapes (<, >, &, a quote, non-ASCII).
func pageFixture() map[string]string {
	files := numberedPrompts(130, 3)
	files["p007.md"] = promptFile("p007", `Compare <a> & <b>, "quoted" — naïvely.`,
		"arguments:\n  - name: count\n    type: integer\n    description: How many.\n    default: 3\n  - name: topic\n    type: string\n    description: What about.\n    required: true\n"+
			"input:\n  path: in.txt\n  description: the text\noutput:\n  path: out.txt\n  description: the result\n",
		"# P007\n\n## Run\n\n```lua\nreturn 'ok'\n```\n")
	files["p011.md"] = "---\nname: p011\ndescription: x\npromptforge: 1\n---\nno heading\n"
	files["p105.md"] = "---\nname: p105\npromptforge: 1\n---\n# broken: no description\n"
	files["p020.md"] = promptFile("p020", "Write.", "", "# T\n\n```lua\nmodels.default(\"writer\", \"A model for clear technical prose\", {context = 1000000})\n```\n\n## A\n\nWrite.\n")
	return files
}

// A kept page is exactly the page rendered afresh, for the pages kept
// (offsets a caller reaches through next_cursor) and those that are not.
func TestListPromptsKeptPageMatchesAFreshRendering(t *testing.T) {
	h := newHarness(t, fixture{prompts: pageFixture(), opts: func(o *Options) { o.Models = modelset.Static([]gateway.Model{testModel}) }})
	for _, cursor := range []string{"", "100", "50", "9999"} {
		args := map[string]any{"cursor": cursor}
		first, second := h.ok(ToolListPrompts, args), h.ok(ToolListPrompts, args)
		offset, _ := parseCursor(cursor)
		fresh, keep, err := h.srv.renderPage(context.Background(), h.handle.Current(), []gateway.Model{testModel}, nil, offset)
		if err != nil || !keep {
			t.Fatalf("cursor %q: render: %v (keep %v)", cursor, err, keep)
		}
		for i, res := range []*mcp.CallToolResult{first, second} {
			if got := textOf(t, res); got != fresh.text {
				t.Errorf("cursor %q, call %d: text\n%s\nwant\n%s", cursor, i+1, got, fresh.text)
			}
		}
	}
	_, kept0 := h.srv.pages.pages[0]
	_, kept100 := h.srv.pages.pages[100]
	if len(h.srv.pages.pages) != 2 || !kept0 || !kept100 {
		t.Fatalf("kept pages %v, want those at 0 and 100", h.srv.pages.pages)
	}
	// The fixture has what it claims: a next_cursor, a broken entry, a
	// binding problem, arguments and declarations, escaped text.
	page := textOf(t, h.ok(ToolListPrompts, map[string]any{}))
	for _, want := range []string{`"next_cursor":"100"`, `does not parse`, `needs a model for \"writer\"`, `"default":3`, `"required":true`, `"input":{"description":"the text","path":"in.txt"}`, `<a> & <b>, \"quoted\" — naïvely`} {
		if !strings.Contains(page, want) {
			t.Errorf("the first page lacks %s:\n%s", want, page)
		}
	}
}

// The bytes a client reads for list_prompts are the SDK's own encoding of
// the same result, on a kept page and a fresh one, in both protocol eras
// (2026-07-28 adds the result type and the server's _meta after the
// tools/call handler has returned).
func TestListPromptsWireMatchesTheSDKEncoding(t *testing.T) {
	h := newHarness(t, fixture{prompts: pageFixture(), opts: func(o *Options) { o.Models = modelset.Static([]gateway.Model{testModel}) }})
	// The same tool and handler on a bare SDK server: no middleware, so
	// the SDK encodes the handler's CallToolResult itself.
	plain := mcp.NewServer(h.srv.impl, nil)
	for _, tool := range h.srv.builtins {
		if tool.Name == ToolListPrompts {
			plain.AddTool(tool, h.srv.listPrompts)
		}
	}
	for _, era := range []struct{ name, init, meta string }{
		{"2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, ""},
		{"2026-07-28", "", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`},
	} {
		t.Run(era.name, func(t *testing.T) {
			ours, bare := rawSession(t, h.srv.MCP(), era.init), rawSession(t, plain, era.init)
			for i, cursor := range []string{"", "", "100", "50"} {
				call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_prompts","arguments":{"cursor":%q}%s}}`, 10+i, cursor, era.meta)
				got, want := ours(call), bare(call)
				if got != want {
					t.Fatalf("cursor %q (call %d):\n got %s\nwant %s", cursor, i+1, got, want)
				}
				if !strings.Contains(got, `"structuredContent":{"`) {
					t.Fatalf("not a listing: %s", got)
				}
			}
		})
	}
}

// rawSession connects srv to a client that writes JSON-RPC lines and
// reads the server's lines as they are; it returns a func that sends one
// call and returns the reply line. init, when given, is sent first (the
// 2025 handshake).
func rawSession(t *testing.T, srv *mcp.Server, init string) func(string) string {
	t.Helper()
	client, server := net.Pipe()
	ss, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: server, Writer: server}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		ss.Wait()
	})
	lines := bufio.NewReaderSize(client, 1<<20)
	call := func(msg string) string {
		t.Helper()
		if _, err := client.Write([]byte(msg + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	if init != "" {
		call(init)
		if _, err := client.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	return call
}

// Every input of a page shows up in the next listing: a reloaded catalog,
// another model list, another tool set.
func TestListPromptsKeptPagesFollowTheirInputs(t *testing.T) {
	need := promptFile("fetcher", "Bind a tool.", "", "# Bind\n\n```lua\ntools.need(\"fetch\", \"Fetch a web page and return its main content as markdown.\")\n```\n\n## Run\n\n```lua\nreturn \"bound\"\n```\n")
	writer := promptFile("writer", "Write.", "", "# T\n\n```lua\nmodels.default(\"writer\", \"A model for clear technical prose\")\n```\n\n## A\n\nWrite.\n")
	h := newHarness(t, fixture{
		prompts: map[string]string{"fetcher.md": need, "writer.md": writer, "echo.md": luaPrompt("echo", "Echo.", "return args")},
		opts: func(o *Options) {
			o.Models = modelset.Static([]gateway.Model{testModel})
			o.Tools = []tools.Tool{fetchTool{}}
		},
	})
	entry := func(name string) string {
		t.Helper()
		for _, p := range h.list("").Prompts {
			if string(p["name"]) == `"`+name+`"` {
				return string(p["description"]) + " " + string(p["problem"])
			}
		}
		t.Fatalf("%s is not listed", name)
		return ""
	}
	if got := entry("echo") + entry("fetcher") + entry("writer"); got != `"Echo." null"Bind a tool." null"Write." null` {
		t.Fatalf("before: %s", got)
	}

	servertest.WriteTree(t, h.dir, map[string]string{"echo.md": luaPrompt("echo", "Echo, saved again.", "return args")})
	if _, err := h.handle.Reload(context.Background(), reloadAll(h.dir)); err != nil {
		t.Fatal(err)
	}
	if got := entry("echo"); got != `"Echo, saved again." null` {
		t.Errorf("after a reload: %s", got)
	}

	h.srv.models = nil
	if got := entry("writer"); !strings.Contains(got, "ollama pull") {
		t.Errorf("after the model list changed: %s", got)
	}

	h.srv.tools = []tools.Tool{}
	if got := entry("fetcher"); !strings.Contains(got, "no live tool matches") {
		t.Errorf("after the tool set changed: %s", got)
	}
}

// TestListingInputsAreTheSameLists: the listing's caches take a list for
// the one they hold only when it is that list (its backing array and
// length), not a copy with the same contents, which a refresh makes.
func TestListingInputsAreTheSameLists(t *testing.T) {
	models := []gateway.Model{testModel}
	ts := []tools.Tool{fetchTool{}}
	in := listingInputs{models: models, tools: ts}
	for _, tc := range []struct {
		name string
		o    listingInputs
		want bool
	}{
		{"the same lists", listingInputs{models: models, tools: ts}, true},
		{"a copied model list", listingInputs{models: append([]gateway.Model(nil), models...), tools: ts}, false},
		{"a copied tool set", listingInputs{models: models, tools: append([]tools.Tool(nil), ts...)}, false},
		{"a shorter model list", listingInputs{models: models[:0], tools: ts}, false},
		{"no tools", listingInputs{models: models}, false},
	} {
		if got := in.is(tc.o); got != tc.want {
			t.Errorf("%s: is = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !(listingInputs{}).is(listingInputs{models: []gateway.Model{}, tools: []tools.Tool{}}) {
		t.Error("empty lists are not the same inputs as nil ones")
	}
}
