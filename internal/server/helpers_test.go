package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { bin.Remove() }))
}

// promptFile renders a prompt file with the given frontmatter extras and
// body (everything after the frontmatter).
func promptFile(name, description, extra, body string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\npromptforge: 1\n" + extra + "---\n" + body
}

// luaPrompt is a prompt whose one section runs lua and returns its value.
func luaPrompt(name, description, lua string) string {
	return promptFile(name, description, "", "# "+strings.ToUpper(name[:1])+name[1:]+"\n\n## Run\n\n```lua\n"+lua+"\n```\n")
}

// speakPrompt is one prose section against the test model: one model turn.
func speakPrompt(name string) string {
	return promptFile(name, "Say one thing through the model.", "",
		"# Speak\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nSay something.\n")
}

// The fixture every dispatch test starts from (mcp-server §11, dispatch.rs).
var basePrompts = map[string]string{
	"echo.md":      luaPrompt("echo", "Return the arguments unchanged.", "return args"),
	"greet.md":     luaPrompt("greet", "Greet someone by name.", "return args"),
	"explode.md":   luaPrompt("explode", "Fail with a Lua runtime error.", `error("boom")`),
	"summarize.md": speakPrompt("summarize"),
}

// fixture describes a test server.
type fixture struct {
	prompts map[string]string // nil: basePrompts
	limits  Limits
	opts    func(*Options)
	catalog catalog.Options
	tools   []string // [catalog].tools
}

// numberedPrompts is n Lua prompts named p0, p1, ... with the number
// zero-padded to digits: a large catalog in name order.
func numberedPrompts(n, digits int) map[string]string {
	files := make(map[string]string, n)
	for i := range n {
		name := fmt.Sprintf("p%0*d", digits, i)
		files[name+".md"] = luaPrompt(name, "Prompt number "+name+".", "return 1")
	}
	return files
}

// deadlineLimits are the default limits with another reply deadline.
func deadlineLimits(d time.Duration) Limits {
	l := defaultLimits()
	l.ReplyDeadline = d
	return l
}

func defaultLimits() Limits {
	return Limits{MaxConcurrentRuns: 4, AdmissionTimeout: 30 * time.Second, ReplyDeadline: 240 * time.Second, RetainCompleted: time.Hour}
}

// harness is a Server with an in-memory go-sdk client session.
type harness struct {
	t       testing.TB
	dir     string // prompts root
	handle  *catalog.Handle
	srv     *Server
	session *mcp.ClientSession
	server  *mcp.ServerSession
}

// newHarness builds the server from f and connects a real go-sdk client
// over the SDK's in-memory transport. Everything is closed when the test
// ends.
func newHarness(t testing.TB, f fixture) *harness {
	t.Helper()
	dir := t.TempDir()
	files := f.prompts
	if files == nil {
		files = basePrompts
	}
	servertest.WriteTree(t, dir, files)
	h := &harness{t: t, dir: dir}
	settings := catalog.Settings{Roots: []string{dir}, Include: []string{"**/*.md"}, Tools: f.tools}
	var err error
	h.handle, err = catalog.New(context.Background(), settings, f.catalog)
	if err != nil {
		t.Fatalf("resolve the fixture catalog: %v", err)
	}
	limits := f.limits
	if limits == (Limits{}) {
		limits = defaultLimits()
	}
	opts := Options{Catalog: h.handle, Limits: limits, Version: "test", FileRoots: []string{dir}}
	if f.opts != nil {
		f.opts(&opts)
	}
	h.srv, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.session = h.connect(nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.srv.Close(ctx); err != nil {
			t.Errorf("close the server: %v", err)
		}
	})
	return h
}

// connect opens another client session on the same server.
func (h *harness) connect(opts *mcp.ClientOptions) *mcp.ClientSession {
	h.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.server == nil {
		h.server = ss
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call calls a tool with arguments (marshalled as given).
func (h *harness) call(name string, args any) (*mcp.CallToolResult, error) {
	return h.callOn(context.Background(), h.session, name, args)
}

func (h *harness) callOn(ctx context.Context, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// ok calls a tool that must not be a protocol error.
func (h *harness) ok(name string, args any) *mcp.CallToolResult {
	h.t.Helper()
	res, err := h.call(name, args)
	if err != nil {
		h.t.Fatalf("%s %v: protocol error %v", name, args, err)
	}
	return res
}

// protocolError calls a tool that must fail with a JSON-RPC error and
// returns it.
func (h *harness) protocolError(name string, args any) *jsonrpc.Error {
	h.t.Helper()
	res, err := h.call(name, args)
	if err == nil {
		h.t.Fatalf("%s %v: got result %+v, want a protocol error", name, args, res)
	}
	return wireError(h.t, err)
}

func wireError(t testing.TB, err error) *jsonrpc.Error {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
	}
	return we
}

// textOf is the single text block of a result.
func textOf(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	return servertest.TextOf(t, res)
}

// structuredOf is the result's structuredContent as a generic object.
func structuredOf(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.StructuredContent == nil {
		t.Fatalf("result has no structuredContent: %+v", res)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s is not an object: %v", b, err)
	}
	return m
}

// tcpGateway is a scripted gateway on loopback and a client for it.
func tcpGateway(t testing.TB) (*gatewaytest.Server, *gateway.Client) {
	t.Helper()
	return servertest.Gateway(t)
}

// testModel is what gatewaytest serves by default.
var testModel = servertest.TestModel

// withGateway points runs at c with the test model.
func withGateway(c *gateway.Client) func(*Options) {
	return func(o *Options) {
		o.Client = c
		o.Models = modelset.Static([]gateway.Model{testModel})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
