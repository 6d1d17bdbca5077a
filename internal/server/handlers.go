package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/humantime"
	"github.com/promptforge-go/promptforge/internal/jsonwire"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// listPageSize is list_prompts' page size (mcp-server §4.5).
const listPageSize = 100

// maxCapabilityBytes bounds a need_prompt capability: one short phrase is
// what ranks well, and a bound keeps a ranking cheap.
const maxCapabilityBytes = 4096

// shortlistSize is how many prompts need_prompt offers at most.
const shortlistSize = 3

// Argument keys per tool, in schema order: the schemas' properties.
var (
	listPromptsKeys = keysOf(listPromptsProps)
	runPromptKeys   = keysOf(runPromptProps)
	needPromptKeys  = keysOf(needPromptProps)
	checkRunKeys    = keysOf(checkRunProps)
)

// textResult is a model-correctable failure: isError with one text block
// and no structuredContent (mcp-server §4.9).
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// structured is a result whose structuredContent is body and whose one
// text block is text.
func structured(body json.RawMessage, text string, isError bool) *mcp.CallToolResult {
	// The result, its one-block content slice and the block are one
	// allocation instead of three: every run_prompt and check_run call
	// makes one (issue #12).
	r := &structuredResult{text: mcp.TextContent{Text: text}}
	r.content[0] = &r.text
	r.res = mcp.CallToolResult{Content: r.content[:], StructuredContent: body, IsError: isError}
	return &r.res
}

// structuredResult holds what structured returns, and what it points to.
type structuredResult struct {
	res     mcp.CallToolResult
	content [1]mcp.Content
	text    mcp.TextContent
}

// marshal encodes v compactly without HTML escaping: prompt names,
// descriptions and values are prose and code, and escaping <, > and &
// would only make them harder to read.
func marshal(v any) ([]byte, error) { return jsonwire.Marshal(v) }

// runResult renders a run record: structuredContent is the eight-key wire
// object (record), the text is recordText, and only a failed run is an
// error.
func runResult(res runs.Result) (*mcp.CallToolResult, error) {
	// The record writes its own bytes; through marshal they would only be
	// checked and copied again.
	body, err := record(res).MarshalJSON()
	if err != nil {
		return nil, internalError("render the run result: %v", err)
	}
	return structured(body, recordText(res), recordIsError(res)), nil
}

// listingEntry is one list_prompts entry. Fields are in alphabetical order
// of their keys, the order the reference writes them in.
type listingEntry struct {
	Arguments   []argumentEntry `json:"arguments,omitempty"`
	Description string          `json:"description"`
	Input       *fileDecl       `json:"input,omitempty"`
	Name        string          `json:"name"`
	Output      *fileDecl       `json:"output,omitempty"`
	Problem     *string         `json:"problem"`
}

// argumentEntry is one typed argument as list_prompts shows it, keys in
// alphabetical order like the rest of the entry. Default is omitted when
// none is declared (a declared false or 0 is shown).
type argumentEntry struct {
	Default     any    `json:"default,omitempty"`
	Description string `json:"description"`
	Name        string `json:"name"`
	Required    bool   `json:"required"`
	Type        string `json:"type"`
}

func argumentsOf(decl []prompt.Argument) []argumentEntry {
	if decl == nil {
		return nil
	}
	out := make([]argumentEntry, len(decl))
	for i, a := range decl {
		out[i] = argumentEntry{Default: a.Default, Description: a.Description, Name: a.Name, Required: a.Required, Type: string(a.Type)}
	}
	return out
}

// fileDecl is a declared input or output file as list_prompts shows it.
type fileDecl struct {
	Description string `json:"description"`
	Path        string `json:"path"`
}

func declOf(d *prompt.FileDecl) *fileDecl {
	if d == nil {
		return nil
	}
	return &fileDecl{Description: d.Description, Path: d.Path}
}

type listing struct {
	NextCursor string         `json:"next_cursor,omitempty"`
	Prompts    []listingEntry `json:"prompts"`
}

func (s *Server) listPrompts(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := parseArguments(ToolListPrompts, req.Params.Arguments, listPromptsKeys)
	if err != nil {
		return nil, err
	}
	cursor, err := args.optional("cursor")
	if err != nil {
		return nil, err
	}
	offset, err := parseCursor(cursor)
	if err != nil {
		return nil, err
	}
	page, err := s.listingPage(ctx, offset)
	if err != nil {
		return nil, err
	}
	if slot, ok := ctx.Value(pageSlotKey{}).(*pageSlot); ok {
		slot.page = page
	}
	return page.result(), nil
}

type candidate struct {
	Description string `json:"description"`
	Name        string `json:"name"`
}

type shortlist struct {
	Prompts []candidate `json:"prompts"`
}

func (s *Server) needPrompt(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := parseArguments(ToolNeedPrompt, req.Params.Arguments, needPromptKeys)
	if err != nil {
		return nil, err
	}
	capability, err := args.required("capability")
	if err != nil {
		return nil, err
	}
	if n := len(capability); n > maxCapabilityBytes {
		return textResult(fmt.Sprintf("the capability is %d bytes, over the %d-byte limit; state it as one short imperative phrase", n, maxCapabilityBytes)), nil
	}
	entries, err := s.catalog.Current().Shortlist(ctx, capability, shortlistSize)
	switch {
	case errors.Is(err, catalog.ErrRetrievalUnavailable):
		return textResult("need_prompt cannot answer because its retrieval index is not loaded; call list_prompts and choose a prompt from the catalog instead"), nil
	case err != nil:
		// Shortlist's message already says which step failed.
		return nil, internalError("%v", err)
	}
	out := shortlist{Prompts: make([]candidate, 0, len(entries))}
	for _, e := range entries {
		out.Prompts = append(out.Prompts, candidate{Name: e.Name(), Description: e.Description()})
	}
	body, err := marshal(out)
	if err != nil {
		return nil, internalError("render the candidates: %v", err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		return nil, internalError("render the candidates: %v", err)
	}
	return structured(body, pretty.String(), false), nil
}

func (s *Server) checkRun(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := parseArguments(ToolCheckRun, req.Params.Arguments, checkRunKeys)
	if err != nil {
		return nil, err
	}
	id, err := args.required("run_id")
	if err != nil {
		return nil, err
	}
	withTrace, err := args.boolean("include_trace")
	if err != nil {
		return nil, err
	}
	v, ok, err := s.runs.Lookup(ctx, id)
	if err != nil {
		s.log.Error("check_run could not read the run store", "run_id", id, "error", err.Error())
		return textResult(fmt.Sprintf("run %s cannot be read now: the run store does not answer; retry in a moment", strconv.Quote(id))), nil
	}
	res := v.Result
	if !ok {
		return textResult(fmt.Sprintf("there is no run %s: a run can be collected while it is going and for %s after it finishes, and older runs have been evicted; start it again with run_prompt",
			strconv.Quote(id), humantime.Format(s.runs.RetainCompleted()))), nil
	}
	if withTrace {
		return s.checkRunTrace(res)
	}
	return runResult(res)
}
