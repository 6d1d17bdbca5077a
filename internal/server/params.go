package server

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/promptforge-go/promptforge/internal/prompt"
)

// callArgs is what a caller gave for a prompt's arguments, from whichever
// surface: run_prompt's args and arguments, a prompt tool's own
// parameters, or prompts/get's string map.
type callArgs struct {
	// raw is the one args string; rawGiven says it was given at all.
	raw      string
	rawGiven bool
	// typed are the typed arguments as given, nil when none were. Values
	// are JSON-decoded (string, float64, bool, ...), or strings when text
	// is set.
	typed map[string]any
	// text: the values are strings to read as their declared type
	// (prompts/get, whose arguments are a map of strings).
	text bool
}

// argumentsRefused is a refusal of the arguments a caller gave: run_prompt
// and prompt tools answer it as any refusal, prompts/get as -32602.
type argumentsRefused string

func (r argumentsRefused) Error() string { return string(r) }
func (argumentsRefused) refusal()        {}

// bindArguments checks c against the prompt's declared arguments
// (prompt-language §1.1) and applies their defaults (prompt.Bind). A
// prompt that declares none takes the raw args string exactly as before.
// For one that does, an args string must be a JSON object of its
// arguments, so a caller that knows only the raw form still reaches it.
// The refusal is worded for the caller and names the argument.
func bindArguments(name string, decl []prompt.Argument, c callArgs) (prompt.Bound, error) {
	if decl == nil {
		if len(c.typed) > 0 {
			return prompt.Bound{}, argumentsRefused(fmt.Sprintf("prompt %s declares no typed arguments, so it takes no arguments object; pass its input as the one args string", strconv.Quote(name)))
		}
		return prompt.Bound{Args: c.raw}, nil
	}
	typed := c.typed
	if c.rawGiven && c.raw != "" {
		if typed != nil {
			return prompt.Bound{}, argumentsRefused(fmt.Sprintf("prompt %s takes typed arguments (%s): pass them in arguments, not also in args", strconv.Quote(name), prompt.DescribeArguments(decl)))
		}
		if err := json.Unmarshal([]byte(c.raw), &typed); err != nil || typed == nil {
			return prompt.Bound{}, argumentsRefused(fmt.Sprintf("prompt %s takes typed arguments (%s): pass them in arguments as a JSON object, or args as the same object in JSON", strconv.Quote(name), prompt.DescribeArguments(decl)))
		}
	}
	b, err := prompt.Bind(name, decl, typed, c.text)
	if err != nil {
		return prompt.Bound{}, argumentsRefused(err.Error())
	}
	return b, nil
}
