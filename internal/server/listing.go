package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// A list_prompts page of a large catalog is tens of kilobytes sent twice
// (structuredContent and the same JSON as text, mcp-server §4.5), and its
// cost was the encoding, not the listing: building and encoding the page
// on every call, then the SDK encoding it again (the text block's string
// escaped, both halves checked and compacted inside CallToolResult's
// MarshalJSON, before jsonrpc2 checks the whole result once more). So a
// page is rendered once per catalog generation, model list and tool set
// (every input of its entries: descriptions and declarations come from
// the generation, binding problems from the probe under the models and
// tools) and kept with the bytes the SDK would write for it; a call hands
// those bytes back.

// encodedPage is one rendered list_prompts page.
type encodedPage struct {
	// body is the structuredContent, compact JSON (jsonwire.Marshal).
	body json.RawMessage
	// text is body as the text block's string, converted once.
	text string
	// members are the result's "content" and "structuredContent" members
	// exactly as CallToolResult.MarshalJSON writes them for this page,
	// without the braces.
	members []byte
}

// result is the page as a fresh CallToolResult: the SDK writes into the
// result it is given (_meta, the result type), so results are never
// shared, only their bytes.
func (p *encodedPage) result() *mcp.CallToolResult {
	return structured(p.body, p.text, false)
}

// renderPage builds and encodes the page of gen's catalog at offset. It
// reports whether the page may be kept: not when ctx ended while a binding
// probe ran, since the problem that probe left is not the one the next
// listing would find.
func (s *Server) renderPage(ctx context.Context, gen *catalog.Generation, models []gateway.Model, ts []tools.Tool, offset int) (*encodedPage, bool, error) {
	cat := gen.Catalog()
	entries := cat.Page(offset, listPageSize)
	out := listing{Prompts: make([]listingEntry, 0, len(entries))}
	for _, e := range entries {
		le := listingEntry{Name: e.Name(), Description: e.Description()}
		if e.Broken() {
			problem := e.Problem()
			le.Problem = &problem
		} else if p := e.Prompt(); p != nil {
			le.Input, le.Output = declOf(p.Frontmatter.Input), declOf(p.Frontmatter.Output)
			le.Arguments = argumentsOf(p.Frontmatter.Arguments)
			if problem := s.problems.problem(ctx, gen, models, ts, e); problem != "" {
				// A copy, so that only a listed problem is allocated.
				listed := problem
				le.Problem = &listed
			}
		}
		out.Prompts = append(out.Prompts, le)
	}
	if end := offset + listPageSize; end < cat.Len() {
		out.NextCursor = strconv.Itoa(end)
	}
	body, err := marshal(out)
	if err != nil {
		return nil, false, internalError("render the prompt listing: %v", err)
	}
	p := &encodedPage{body: body, text: string(body)}
	// The members as the SDK's own encoder writes them (the text escaped
	// and the structured half compacted with its HTML escaping), so that
	// a kept page is byte for byte what an unkept one would be.
	members, err := json.Marshal(struct {
		Content           []mcp.Content   `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}{[]mcp.Content{&mcp.TextContent{Text: p.text}}, p.body})
	if err != nil {
		return nil, false, internalError("render the prompt listing: %v", err)
	}
	p.members = members[1 : len(members)-1]
	return p, ctx.Err() == nil, nil
}

// listingPage is the page at offset of the current generation, from the
// page cache when it holds it.
func (s *Server) listingPage(ctx context.Context, offset int) (*encodedPage, error) {
	gen := s.catalog.Current()
	// The list binding would use now, without fetching it again: a
	// listing never contacts the model server.
	var models []gateway.Model
	if s.models != nil {
		models = s.models.Snapshot().Models
	}
	ts := s.tools
	if p := s.pages.get(gen, models, ts, offset); p != nil {
		return p, nil
	}
	p, keep, err := s.renderPage(ctx, gen, models, ts, offset)
	if err != nil {
		return nil, err
	}
	if keep {
		s.pages.put(gen, models, ts, offset, p)
	}
	return p, nil
}

// pageCache keeps the rendered pages of one catalog generation, model
// list and tool set; any other key empties it. Only the pages a caller
// reaches by following next_cursor are kept (offsets that are multiples
// of the page size, inside the catalog): any other offset is valid but
// rendered each time, so the cache holds at most one page per hundred
// entries, whatever offsets callers send.
type pageCache struct {
	mu    sync.Mutex
	in    listingInputs
	pages map[int]*encodedPage // by offset
}

func (c *pageCache) matches(in listingInputs) bool {
	return c.pages != nil && c.in.is(in)
}

func (c *pageCache) get(gen *catalog.Generation, models []gateway.Model, ts []tools.Tool, offset int) *encodedPage {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.matches(listingInputs{gen, models, ts}) {
		return nil
	}
	return c.pages[offset]
}

func (c *pageCache) put(gen *catalog.Generation, models []gateway.Model, ts []tools.Tool, offset int, p *encodedPage) {
	if offset%listPageSize != 0 || (offset > 0 && offset >= gen.Catalog().Len()) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := (listingInputs{gen, models, ts}); !c.matches(in) {
		c.in, c.pages = in, map[int]*encodedPage{}
	}
	c.pages[offset] = p
}

// pageSlotKey files a pageSlot in a list_prompts call's context.
type pageSlotKey struct{}

// pageSlot is where listPrompts leaves the page it answered with, for
// pagesMiddleware.
type pageSlot struct{ page *encodedPage }

// pagesMiddleware hands a list_prompts result to the SDK with its page's
// bytes, so that they are not encoded again: a tool handler can only
// return a *mcp.CallToolResult, which go-sdk v1.8.0 encodes in full
// (CallToolResult.MarshalJSON: TextContent.MarshalJSON escapes the text,
// and encoding/json checks and compacts the text block and the
// structured half, then the whole result). The swap happens after the
// SDK's tools/call handler has finished the result (its result type) and
// before the session adds _meta; pagedResult writes both.
func (s *Server) pagesMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || call.Params.Name != ToolListPrompts {
			return next(ctx, method, req)
		}
		slot := &pageSlot{}
		res, err := next(context.WithValue(ctx, pageSlotKey{}, slot), method, req)
		if err != nil || slot.page == nil {
			return res, err
		}
		r, ok := res.(*mcp.CallToolResult)
		if !ok || !slot.page.answers(r) {
			// Something between the handler and here changed the
			// result: the SDK encodes it as it is.
			return res, nil
		}
		return &pagedResult{CallToolResult: r, page: slot.page}, nil
	}
}

// answers reports whether r is still exactly p's result: its body and
// text, and nothing added to them.
func (p *encodedPage) answers(r *mcp.CallToolResult) bool {
	sc, ok := r.StructuredContent.(json.RawMessage)
	if !ok || len(sc) != len(p.body) || len(sc) == 0 || &sc[0] != &p.body[0] || len(r.Content) != 1 || r.IsError {
		return false
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	return ok && tc.Text == p.text && tc.Meta == nil && tc.Annotations == nil
}

// pagedResult is a list_prompts result whose content members are written
// from its page. It embeds the SDK's result, so the SDK's own handling
// after the middleware (the result type, the server's _meta) lands in it,
// and MarshalJSON writes exactly what CallToolResult.MarshalJSON would.
type pagedResult struct {
	*mcp.CallToolResult
	page *encodedPage
}

// shellHead is how CallToolResult.MarshalJSON starts a result without
// _meta, content or structuredContent: every other member follows it.
const shellHead = `{"content":null`

func (r *pagedResult) MarshalJSON() ([]byte, error) {
	// The members other than the page's are the SDK's to write (their
	// order, the unexported result type): it writes them for the result
	// without its three large or map-valued ones, and the page's are
	// spliced in where "content" stood, after _meta, which comes first.
	shell := *r.CallToolResult
	shell.Meta, shell.Content, shell.StructuredContent = nil, nil, nil
	rest, err := json.Marshal(&shell)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(rest, []byte(shellHead)) {
		// A go-sdk that lays results out otherwise: its own encoding.
		return r.CallToolResult.MarshalJSON()
	}
	var meta []byte
	if len(r.Meta) > 0 {
		if meta, err = json.Marshal(r.Meta); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, len(`{"_meta":,`)+len(meta)+len(r.page.members)+len(rest))
	out = append(out, '{')
	if meta != nil {
		out = append(out, `"_meta":`...)
		out = append(out, meta...)
		out = append(out, ',')
	}
	out = append(out, r.page.members...)
	return append(out, rest[len(shellHead):]...), nil
}
