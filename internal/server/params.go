package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
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

// bound is a call's arguments checked against the prompt: the args
// string the run sees and, for a prompt with typed arguments, params.
type bound struct {
	args   string
	params map[string]any
}

// bindArguments checks c against the prompt's declared arguments
// (prompt-language §2.1) and applies their defaults. A prompt that
// declares none takes the raw args string exactly as before. For one that
// does, args is the bound arguments as compact JSON with sorted keys, so a
// prompt written against args still reads something, and params holds
// them by name. An args string given to such a prompt must be a JSON
// object of its arguments: a caller that knows only the raw form still
// reaches it. The error is worded for the caller and names the argument.
func bindArguments(name string, decl []prompt.Argument, c callArgs) (bound, error) {
	if decl == nil {
		if len(c.typed) > 0 {
			return bound{}, argumentsRefused(fmt.Sprintf("prompt %s declares no typed arguments, so it takes no arguments object; pass its input as the one args string", strconv.Quote(name)))
		}
		return bound{args: c.raw}, nil
	}
	typed := c.typed
	if c.rawGiven && c.raw != "" {
		if typed != nil {
			return bound{}, argumentsRefused(fmt.Sprintf("prompt %s takes typed arguments (%s): pass them in arguments, not also in args", strconv.Quote(name), describeArgs(decl)))
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.raw), &obj); err != nil || obj == nil {
			return bound{}, argumentsRefused(fmt.Sprintf("prompt %s takes typed arguments (%s): pass them in arguments as a JSON object, or args as the same object in JSON", strconv.Quote(name), describeArgs(decl)))
		}
		typed = obj
	}
	var unknown []string
	for k := range typed {
		if !slices.ContainsFunc(decl, func(a prompt.Argument) bool { return a.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return bound{}, argumentsRefused(fmt.Sprintf("prompt %s has no argument %s; its arguments are %s", strconv.Quote(name), strconv.Quote(unknown[0]), describeArgs(decl)))
	}
	params := make(map[string]any, len(decl))
	for _, a := range decl {
		v, ok := typed[a.Name]
		if ok && c.text && v == "" {
			// A slash-command form sends an unfilled field as "": it is
			// not given, so a default applies and a required one is
			// missing.
			ok = false
		}
		if !ok {
			switch {
			case a.Required:
				return bound{}, argumentsRefused(fmt.Sprintf("prompt %s needs argument %s (%s%s); its arguments are %s", strconv.Quote(name), strconv.Quote(a.Name), a.Type, describeOf(a), describeArgs(decl)))
			case a.Default != nil:
				params[a.Name] = a.Default
			}
			continue
		}
		got, ok := coerce(a.Type, v, c.text)
		if !ok {
			return bound{}, argumentsRefused(fmt.Sprintf("argument %s of prompt %s must be %s, got %s", strconv.Quote(a.Name), strconv.Quote(name), a.Type.Phrase(), given(v)))
		}
		params[a.Name] = got
	}
	args, err := jsonwire.Marshal(params)
	if err != nil {
		return bound{}, internalError("encode the arguments of %s: %v", name, err)
	}
	return bound{args: string(args), params: params}, nil
}

// coerce reads one given value as t; with text, a string is first read
// the way a person types it (42, 2.5, true).
func coerce(t prompt.ArgType, v any, text bool) (any, bool) {
	if s, isString := v.(string); text && isString && t != prompt.ArgString {
		switch t {
		case prompt.ArgBoolean:
			b, err := strconv.ParseBool(strings.TrimSpace(s))
			if err != nil {
				return nil, false
			}
			v = b
		default:
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, false
			}
			v = f
		}
	}
	return prompt.CoerceArgument(t, v)
}

// given renders a wrong value for a message: its JSON, cut short.
func given(v any) string {
	b, err := jsonwire.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	b = bytes.TrimSpace(b)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func describeOf(a prompt.Argument) string {
	if a.Description == "" {
		return ""
	}
	return ": " + a.Description
}

// describeArgs lists the declared arguments the way messages show them:
// topic (string, required), count (integer).
func describeArgs(decl []prompt.Argument) string {
	parts := make([]string, len(decl))
	for i, a := range decl {
		parts[i] = a.Name + " (" + string(a.Type)
		if a.Required {
			parts[i] += ", required"
		}
		parts[i] += ")"
	}
	return strings.Join(parts, ", ")
}
