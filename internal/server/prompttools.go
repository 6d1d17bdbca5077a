package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/prompt"
)

// promptTool is a prompt that [catalog].tools names, as tools/list shows
// it: the tool is named after the prompt, its input schema is the typed
// arguments (or the one args string), and its output schema is the run
// record, as run_prompt's.
func promptTool(e catalog.Entry) *mcp.Tool {
	return &mcp.Tool{
		Name: e.Name(),
		Description: e.Description() + "\n\nRuns the prompt " + strconv.Quote(e.Name()) + " on this server. A run that outlasts " +
			"the reply deadline comes back as running with a run_id for check_run. " + valueSentence,
		InputSchema:  promptToolSchema(e.Prompt().Frontmatter.Arguments),
		OutputSchema: json.RawMessage(runRecordOutput),
	}
}

// promptToolSchema is the input schema of a prompt tool: one property per
// typed argument, with its JSON type, description and default, the
// required ones listed; or the one optional args string.
func promptToolSchema(decl []prompt.Argument) json.RawMessage {
	if decl == nil {
		return inputSchema([]property{{name: rawArgsArgument, description: "The prompt's arguments as one raw string. Omitted means the empty string."}})
	}
	props := make([]property, len(decl))
	var required []string
	for i, a := range decl {
		var b strings.Builder
		b.WriteString(`{"type":`)
		b.WriteString(quote(string(a.Type)))
		if a.Description != "" {
			b.WriteString(`,"description":`)
			b.WriteString(quote(a.Description))
		}
		if a.Default != nil {
			b.WriteString(`,"default":`)
			b.WriteString(prompt.PreviewValue(a.Default))
		}
		b.WriteByte('}')
		props[i] = property{name: a.Name, schema: b.String()}
		if a.Required {
			required = append(required, a.Name)
		}
	}
	return inputSchema(props, required...)
}

// runPromptTool is the handler of every prompt tool: the tool's name is
// the prompt's, its arguments the prompt's own. It settles exactly as
// run_prompt does (callRun: same record, same running reply).
func (s *Server) runPromptTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	// One generation for the whole call, as run_prompt.
	entry, ok := s.catalog.Current().Catalog().Tool(name)
	if !ok {
		// A reload removed it between the client's tools/list and this
		// call (the SDK's table follows right after a reload).
		return textResult("the tool " + strconv.Quote(name) + " is no longer published: the catalog changed; list the tools again, or run the prompt with run_prompt"), nil
	}
	r := runRequest{name: name}
	decl := entry.Prompt().Frontmatter.Arguments
	if decl == nil {
		a, err := parseArguments(name, req.Params.Arguments, []string{rawArgsArgument})
		if err != nil {
			return nil, err
		}
		if r.call.raw, err = a.optional(rawArgsArgument); err != nil {
			return nil, err
		}
		_, r.call.rawGiven = a.get(rawArgsArgument)
	} else {
		typed, err := toolArguments(name, req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		r.call.typed = typed
	}
	return s.callRun(ctx, req, entry, r)
}

// toolArguments decodes a prompt tool's arguments object; its keys and
// types are bindArguments' to check, so the message names the prompt's
// arguments.
func toolArguments(tool string, raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var m map[string]any
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, invalidParams("the arguments of %s must be a JSON object", tool)
	}
	return m, nil
}
