package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// sdkWire is what go-sdk v1.8.0 writes for res once callTool and, for a
// 2026-07-28 request, ServerSession.handle have handled it: the
// resultType "complete" (set here through the SDK's own decoder, as the
// field is unexported) and the serverInfo in _meta.
func sdkWire(t *testing.T, res *mcp.CallToolResult, complete bool, impl *mcp.Implementation) string {
	t.Helper()
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	if complete {
		var typed mcp.CallToolResult
		b, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		// The SDK's decoder reads resultType; the rest is res again.
		if err := typed.UnmarshalJSON(append(b[:len(b)-1], `,"resultType":"complete"}`...)); err != nil {
			t.Fatal(err)
		}
		typed.Content, typed.StructuredContent = res.Content, res.StructuredContent
		res = &typed
	}
	if impl != nil {
		res.Meta = mcp.Meta{mcp.MetaKeyServerInfo: impl}
	}
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzCallResultWire holds encodeCallResult to the SDK's encoding of the
// same result: any texts, any JSON body (compact or not), error or not,
// either era.
func FuzzCallResultWire(f *testing.F) {
	for _, seed := range []struct {
		text, text2, body       string
		isError, complete, info bool
	}{
		{"plain", "", `{"a":1}`, false, false, false},
		{"<b>&amp;</b> \u2028 \u2029 \xff é 🙂 \"q\" \\ \n\t\x01", "second", `{"v":"<x>&\u2028"}`, true, true, true},
		{"", "", ``, true, false, true},
		{"x", "", " { \"a\" : [ 1 , 2.50 , null , true , \"\\u003c\" , \"\u2029\" ] } ", false, true, false},
		{"x", "", `"just a string"`, false, false, false},
		{"x", "", `null`, false, false, false},
	} {
		f.Add(seed.text, seed.text2, seed.body, seed.isError, seed.complete, seed.info)
	}
	s := &Server{impl: &mcp.Implementation{Name: "promptforge-mcp-server", Version: "<v1>&"}}
	var err error
	if s.serverInfo, err = json.Marshal(s.impl); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text, text2, body string, isError, complete, info bool) {
		if body != "" && !json.Valid([]byte(body)) {
			return
		}
		build := func() *mcp.CallToolResult {
			res := &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
			if text2 != "" {
				res.Content = append(res.Content, &mcp.TextContent{Text: text2})
			}
			if body != "" {
				res.StructuredContent = json.RawMessage(body)
			}
			return res
		}
		var impl *mcp.Implementation
		if info {
			impl = s.impl
		}
		want := sdkWire(t, build(), complete, impl)
		got, err := s.encodeCallResult(build(), complete, info)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("encodeCallResult:\n got  %s\n want %s", got, want)
		}
	})
}

// TestCallResultWireOtherShapes holds the SDK-encoded branch of
// encodeCallResult (a shape the built-in tools do not return) to the
// SDK's bytes: no content, other content, a _meta of the handler's.
func TestCallResultWireOtherShapes(t *testing.T) {
	s := &Server{impl: &mcp.Implementation{Name: "n", Version: "1"}}
	s.serverInfo, _ = json.Marshal(s.impl)
	shapes := map[string]func() *mcp.CallToolResult{
		"nil content": func() *mcp.CallToolResult { return &mcp.CallToolResult{} },
		"image": func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("<>"), MIMEType: "image/png"}}}
		},
		"annotated text": func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t", Meta: mcp.Meta{"k": "<v>"}}}}
		},
		"handler meta": func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Meta: mcp.Meta{"x": 1}, Content: []mcp.Content{&mcp.TextContent{Text: "t"}}}
		},
		"map body": func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"a": "<b>"}}
		},
	}
	for name, build := range shapes {
		for _, complete := range []bool{false, true} {
			for _, info := range []bool{false, true} {
				want := build()
				if info {
					meta := want.Meta
					if meta == nil {
						meta = mcp.Meta{}
					}
					meta[mcp.MetaKeyServerInfo] = s.impl
					want.Meta = meta
				}
				got, err := s.encodeCallResult(build(), complete, info)
				if err != nil {
					t.Fatal(err)
				}
				if w := sdkWire(t, want, complete, nil); string(got) != w {
					t.Errorf("%s (complete %v, serverInfo %v):\n got  %s\n want %s", name, complete, info, got, w)
				}
			}
		}
	}
}

// TestPageWireIsTheEncodedResult: a list_prompts page answered from its kept
// members (pageWire) is byte for byte what encodeCallResult and the SDK
// write for the same result, in either era and with or without the
// server's Implementation, for pages whose descriptions hold what the
// encodings escape (quotes, backslashes, <, >, &, U+2028) and a broken
// entry; and AnswerCall takes that path for list_prompts.
func TestPageWireIsTheEncodedResult(t *testing.T) {
	files := map[string]string{"broken.md": "no frontmatter at all\n"}
	for i := range 150 {
		name := fmt.Sprintf("p_%03d", i)
		files[name+".md"] = luaPrompt(name, fmt.Sprintf(`Says "%d" <b>&amp;</b> \u2028 back\slash`, i), "return args")
	}
	h := newHarness(t, fixture{prompts: files})
	s := h.srv
	for _, offset := range []int{0, 100} {
		p, err := s.listingPage(t.Context(), offset)
		if err != nil {
			t.Fatal(err)
		}
		for _, complete := range []bool{false, true} {
			for _, info := range []bool{false, true} {
				want, err := s.encodeCallResult(p.result(), complete, info)
				if err != nil {
					t.Fatal(err)
				}
				var impl *mcp.Implementation
				if info {
					impl = s.impl
				}
				if sdk := sdkWire(t, p.result(), complete, impl); string(want) != sdk {
					t.Fatalf("offset %d: encodeCallResult differs from the SDK:\n%s\n%s", offset, want, sdk)
				}
				if got := s.pageWire(p, complete, info); string(got) != string(want) {
					t.Errorf("offset %d, complete %v, serverInfo %v: pageWire\n got  %s\n want %s", offset, complete, info, got, want)
				}
			}
		}
	}
	// AnswerCall hands listPrompts a slot and answers from the page it
	// leaves there: the slot is what tells the two paths apart.
	var saw *pageSlot
	s.direct[ToolListPrompts] = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		saw, _ = ctx.Value(pageSlotKey{}).(*pageSlot)
		return s.listPrompts(ctx, req)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	reply, ok := s.AnswerCall(t.Context(), transport.DirectCall{Session: ss, Params: &mcp.CallToolParamsRaw{Name: ToolListPrompts, Arguments: json.RawMessage(`{}`)}})
	if !ok || reply.Err != nil {
		t.Fatalf("AnswerCall: %v %v", ok, reply.Err)
	}
	if saw == nil || saw.page == nil {
		t.Fatal("list_prompts was not given a page slot, or left no page in it: AnswerCall encoded the page again")
	}
	if want := s.pageWire(saw.page, completeResult(ss), false); string(reply.Wire) != string(want) {
		t.Errorf("AnswerCall:\n got  %s\n want %s", reply.Wire, want)
	}
}
