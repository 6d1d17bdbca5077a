package server

import (
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/names"
)

// The built-in tool names. By default no prompt is published as a tool: a
// catalog can change under a session, and a fixed surface keeps clients'
// tool lists stable and small; [catalog].tools opts prompts in (see
// prompttools.go).
// The names themselves, and the rule that no prompt may take one, are
// owned by package names.
const (
	ToolListPrompts = names.ListPrompts
	ToolRunPrompt   = names.RunPrompt
	ToolNeedPrompt  = names.NeedPrompt
	ToolCheckRun    = names.CheckRun
)

// ServerName is the serverInfo name the reference publishes; clients that
// key configuration on it keep working.
const ServerName = "promptforge-mcp-server"

// valueSentence is the one sentence every surface that hands back a
// prompt's value carries: a model tends to paraphrase tool output, and a
// prompt's value is usually the thing the user asked for.
const valueSentence = "A prompt's value is a finished artifact meant for the user: pass it on as it is instead of restating or summarising it."

// capabilityRegister tells the caller how to phrase a need_prompt query:
// the lexical ranker (and any embedding model) matches an author-style
// description far better than a conversational request.
const capabilityRegister = `Phrase the capability the way a tool author documents a tool: one imperative phrase that names the operation and what it acts on, without entity names, task specifics or conversational framing. Good: "Build a stakeholder position report for one entity." Bad: "I need to know where Herb Sutter stands on ABI stability."`

// instructions is the initialize result's instructions: what the server is
// and the one rule that matters (it runs only what the caller names).
const instructions = "This server executes PromptForge prompts. It runs a prompt only when the caller names one: list_prompts reports the names it can run, and run_prompt takes one of those names. " + valueSentence

// property is one parameter of a tool's input schema: a string unless
// schema gives its whole JSON schema object.
type property struct {
	name, description string
	schema            string
}

// Each tool's parameters, in schema order. The schemas and the argument
// checks (the key lists in handlers.go) are both built from these.
var (
	listPromptsProps = []property{
		{"cursor", "The next_cursor of a previous listing, to read the page after it. Omit it for the first page.", ""},
	}
	runPromptProps = []property{
		{"prompt", "The name of the prompt to run, as list_prompts reports it.", ""},
		{"args", "The prompt's arguments as one raw string, for a prompt without typed arguments (a prompt with them takes arguments instead, or this string as a JSON object of them). Omitted means the empty string.", ""},
		{"arguments", "", `{"type":"object","description":"The typed arguments of a prompt that declares them (list_prompts shows each prompt's arguments), by name. Omit it for a prompt without typed arguments.","additionalProperties":true}`},
		{"input_file", "Path of a text file on the server's filesystem to place in the run's store as the prompt's declared input. Not together with input_text.", ""},
		{"input_text", "Text to place in the run's store as the prompt's declared input. Not together with input_file.", ""},
		{"output_file", "Path on the server's filesystem to write the prompt's declared output file to. Omit it to receive the output in the reply.", ""},
	}
	needPromptProps = []property{
		{"capability", capabilityRegister, ""},
	}
	checkRunProps = []property{
		{"run_id", "The run_id of an earlier running result.", ""},
		{"include_trace", "", `{"type":"boolean","description":"true adds the run's trace: the sections it entered, each model turn and tool call with sizes, tokens and durations, and its log lines (their text only when the server captures content). Default false."}`},
	}
)

// keysOf is the names of props, in order: the argument keys a tool takes.
func keysOf(props []property) []string {
	keys := make([]string, len(props))
	for i, p := range props {
		keys[i] = p.name
	}
	return keys
}

// inputSchema renders {"type":"object","properties":{...},
// "additionalProperties":false,"required":[...]} with properties in the
// given order, so the published bytes (and the golden file) are stable.
func inputSchema(props []property, required ...string) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i, p := range props {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(p.name))
		if p.schema != "" {
			b.WriteByte(':')
			b.WriteString(p.schema)
			continue
		}
		b.WriteString(`:{"type":"string","description":`)
		b.WriteString(quote(p.description))
		b.WriteByte('}')
	}
	b.WriteString(`},"additionalProperties":false`)
	if len(required) > 0 {
		b.WriteString(`,"required":[`)
		for i, r := range required {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(r))
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}

func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		// A Go string always marshals.
		panic(err)
	}
	return string(b)
}

// Output schemas describe each tool's structuredContent (design §3.10).
// A nullable or union field is an anyOf rather than a type array: both are
// valid JSON Schema, but clients that translate schemas for other model
// APIs (the MCP Inspector's --strict check flags them) handle anyOf.
// Failure results that carry only text have no structuredContent and are
// marked isError, which the MCP specification exempts from the schema.
const (
	fileDeclSchema = `{"type":"object","properties":{"path":{"type":"string"},"description":{"type":"string"}},"required":["path","description"],"additionalProperties":false}`

	// argumentsSchema is a prompt's typed arguments as list_prompts
	// shows them; absent for a prompt that takes the raw args string.
	argumentsSchema = `{"type":"array","items":{"type":"object","properties":{` +
		`"name":{"type":"string"},` +
		`"description":{"type":"string"},` +
		`"type":{"type":"string","enum":["string","integer","number","boolean"]},` +
		`"required":{"type":"boolean"},` +
		`"default":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"}]}` +
		`},"required":["name","description","type","required"],"additionalProperties":false}}`

	listPromptsOutput = `{"type":"object","properties":{` +
		`"prompts":{"type":"array","items":{"type":"object","properties":{` +
		`"name":{"type":"string"},` +
		`"description":{"type":"string"},` +
		`"problem":{"anyOf":[{"type":"string"},{"type":"null"}]},` +
		`"input":` + fileDeclSchema + `,` +
		`"output":` + fileDeclSchema + `,` +
		`"arguments":` + argumentsSchema +
		`},"required":["name","description","problem"],"additionalProperties":false}},` +
		`"next_cursor":{"type":"string"}` +
		`},"required":["prompts"],"additionalProperties":false}`

	runRecordOutput = `{"type":"object","properties":{` +
		`"run_id":{"type":"string"},` +
		`"prompt":{"type":"string"},` +
		`"status":{"type":"string","enum":["running","completed","failed"]},` +
		`"value":{"anyOf":[{"type":"string"},{"type":"null"}]},` +
		`"turns":{"type":"integer","minimum":0},` +
		`"tokens":{"type":"object","description":"Tokens the run's model replies reported spending, summed over every turn (0 when the model server reports none; 0 while running).","properties":{` +
		`"prompt":{"type":"integer","minimum":0},` +
		`"completion":{"type":"integer","minimum":0}` +
		`},"required":["prompt","completion"],"additionalProperties":false},` +
		`"elapsed_ms":{"type":"integer","minimum":0},` +
		`"error":{"anyOf":[{"type":"string"},{"type":"null"}]}` +
		recordTail
	// recordTail ends the run record's properties and the object.
	recordTail = `},"required":["run_id","prompt","status","value","turns","tokens","elapsed_ms","error"],"additionalProperties":false}`

	needPromptOutput = `{"type":"object","properties":{` +
		`"prompts":{"type":"array","maxItems":3,"items":{"type":"object","properties":{` +
		`"name":{"type":"string"},` +
		`"description":{"type":"string"}` +
		`},"required":["name","description"],"additionalProperties":false}}` +
		`},"required":["prompts"],"additionalProperties":false}`
)

// checkRunOutput is the run record plus the trace include_trace adds (null
// when the server keeps none for the run).
var checkRunOutput = runRecordOutput[:len(runRecordOutput)-len(recordTail)] +
	`,"trace":{"anyOf":[{"type":"object"},{"type":"null"}],"description":"The run's trace, only with include_trace: steps (kind, name, parent, start_ms, end_ms, status, tokens, info) under the run's header."}` +
	recordTail

// builtinTools returns the published tools in the order tools/list reports
// them: list_prompts, run_prompt, need_prompt (when retrieval is on),
// check_run. They never depend on the catalog; prompt tools follow them
// (follow).
func builtinTools(publishNeedPrompt bool) []*mcp.Tool {
	out := []*mcp.Tool{
		{
			Name: ToolListPrompts,
			Description: "Lists the prompts this server can run. Each entry has the prompt's name, its description, " +
				"and the problem that stops it from running (null when it runs). The listing is read fresh on every " +
				"call, so prompts written since the last call appear. run_prompt takes a name from this list.",
			InputSchema:  inputSchema(listPromptsProps),
			OutputSchema: json.RawMessage(listPromptsOutput),
		},
		{
			Name: ToolRunPrompt,
			Description: "Runs the named prompt and returns the value it produced. The server executes the prompts " +
				"a caller names; prompt is the name exactly as list_prompts reports it. A run that outlasts the " +
				"reply deadline comes back as running with a run_id for check_run. " + valueSentence,
			InputSchema:  inputSchema(runPromptProps, "prompt"),
			OutputSchema: json.RawMessage(runRecordOutput),
		},
	}
	if publishNeedPrompt {
		out = append(out, &mcp.Tool{
			Name: ToolNeedPrompt,
			Description: "Finds the prompts that best match a described capability and returns up to three names, " +
				"best first, with their descriptions. It runs nothing; pass the chosen name to run_prompt. It serves " +
				"callers that were given a prompt by what it does rather than by name. " + capabilityRegister,
			InputSchema:  inputSchema(needPromptProps, "capability"),
			OutputSchema: json.RawMessage(needPromptOutput),
		})
	}
	out = append(out, &mcp.Tool{
		Name: ToolCheckRun,
		Description: "Collects a run that outlived the call that started it. Takes the run_id of a running result " +
			"and reports the run's status now, with its value once it has finished. " + valueSentence,
		InputSchema:  inputSchema(checkRunProps, "run_id"),
		OutputSchema: json.RawMessage(checkRunOutput),
	})
	return out
}
