package server

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// rawArgsArgument is the one MCP prompt argument of a prompt that declares
// no typed arguments: its raw args string, optional as on run_prompt.
const rawArgsArgument = "args"

// mcpPrompt is a catalog prompt as prompts/list shows it: its name, its
// description, and its typed arguments (MCP prompt arguments carry no
// type, so the type and default are told in the description), or the one
// optional args argument.
func mcpPrompt(e catalog.Entry) *mcp.Prompt {
	p := &mcp.Prompt{Name: e.Name(), Description: e.Description()}
	decl := e.Prompt().Frontmatter.Arguments
	if decl == nil {
		p.Arguments = []*mcp.PromptArgument{{
			Name:        rawArgsArgument,
			Description: "The prompt's arguments as one raw string. Omitted means the empty string.",
		}}
		return p
	}
	for _, a := range decl {
		p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: a.Name, Description: argumentNote(a), Required: a.Required})
	}
	return p
}

// argumentNote is a typed argument's description with its type and
// default, which MCP prompt arguments have no field for.
func argumentNote(a prompt.Argument) string {
	note := "(" + string(a.Type)
	if a.Default != nil {
		note += ", default " + prompt.PreviewValue(a.Default)
	}
	note += ")"
	if a.Description == "" {
		return note
	}
	return a.Description + " " + note
}

// promptsGetMiddleware answers prompts/get for a name the SDK's prompt
// table does not hold (yet): a prompt saved a moment ago, before the
// reload registered it, or a broken or removed one, which is answered with
// what is wrong rather than "unknown prompt". A registered name goes on to
// the SDK, whose handler for it is trackedGetPrompt as well: the SDK then
// finishes the result for the client's protocol era (go-sdk v1.8.0 adds
// the 2026-07-28 resultType only on its own dispatch path, mcp/mrtr.go
// handleMultiRoundTripResult), and both paths run the live catalog's
// entry, so a saved body runs at once either way.
func (s *Server) promptsGetMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		gr, ok := req.(*mcp.GetPromptRequest)
		if method != "prompts/get" || !ok {
			return next(ctx, method, req)
		}
		if gr.Params != nil && s.promptRegistered(gr.Params.Name) {
			return next(ctx, method, req)
		}
		return s.trackedGetPrompt(ctx, gr)
	}
}

// promptRegistered reports whether follow has registered name with the SDK.
func (s *Server) promptRegistered(name string) bool {
	s.followMu.Lock()
	defer s.followMu.Unlock()
	_, ok := s.promptSigs[name]
	return ok
}

// trackedGetPrompt runs getPrompt as a tracked call, like every tools/call:
// a shutdown waits for it and a DELETE of its HTTP session cancels its
// run. transport.Calls tracks tool handlers and reads only the request's
// session, so the prompt request rides in a CallToolRequest carrying just
// that.
func (s *Server) trackedGetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	_, err := s.calls.Track(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var err error
		res, err = s.getPrompt(ctx, req)
		return nil, err
	})(ctx, &mcp.CallToolRequest{Session: req.Session})
	return res, err
}

// getPrompt runs the prompt server-side through the same path as
// run_prompt (admission, reply deadline, record) and returns its value as
// one user message: the client inserts a prompt's messages into the
// conversation as the user's turn (that is how slash commands read), and
// the value is what the user asked the prompt for. A run that outlives the
// reply deadline comes back as a user message saying how to collect it
// with check_run, run id included. Failures are JSON-RPC errors, since a
// prompt message cannot be marked as one: unknown prompt or bad arguments
// -32602, a broken prompt, a failed run or a refused start -32603.
func (s *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if req.Params == nil || req.Params.Name == "" {
		return nil, invalidParams("prompts/get needs the name of a prompt")
	}
	entry, err := s.lookup(req.Params.Name)
	if err != nil {
		return nil, asProtocolError(err, invalidParams)
	}
	if entry.Broken() {
		return nil, internalError("prompt %s cannot run: %s", strconv.Quote(entry.Name()), entry.Problem())
	}
	r := runRequest{name: entry.Name(), call: callArgs{text: true}}
	if entry.Prompt().Frontmatter.Arguments == nil {
		for k, v := range req.Params.Arguments {
			if k != rawArgsArgument {
				return nil, invalidParams("prompt %s has no argument %s; its one argument is args, the raw string", strconv.Quote(entry.Name()), strconv.Quote(k))
			}
			r.call.raw, r.call.rawGiven = v, true
		}
	} else if len(req.Params.Arguments) > 0 {
		r.call.typed = make(map[string]any, len(req.Params.Arguments))
		for k, v := range req.Params.Arguments {
			r.call.typed[k] = v
		}
	}
	res, err := s.start(ctx, req.Session, req.Params.GetProgressToken(), entry, r)
	var bad argumentsRefused
	switch {
	case errors.As(err, &bad):
		return nil, invalidParams("%s", bad.Error())
	case err != nil:
		return nil, asProtocolError(err, internalError)
	}
	if res.Status == runs.StatusFailed {
		return nil, internalError("prompt %s failed (run %s): %s", strconv.Quote(res.Prompt), res.RunID, res.Error)
	}
	return &mcp.GetPromptResult{
		Description: entry.Description(),
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: recordText(res)}}},
	}, nil
}

// asProtocolError turns a refusal into the JSON-RPC error as(format) makes;
// other errors are protocol errors already.
func asProtocolError(err error, as func(string, ...any) error) error {
	var no refusal
	if errors.As(err, &no) {
		return as("%s", no.Error())
	}
	return err
}
