package prompt

import (
	"fmt"
	"math"
	"strconv"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/promptforge-go/promptforge/internal/names"
)

// ArgType is the type of a declared argument.
type ArgType string

// The four argument types: JSON's scalars, with integer apart from number
// so a count or a limit is refused when a caller sends 2.5.
const (
	ArgString  ArgType = "string"
	ArgInteger ArgType = "integer"
	ArgNumber  ArgType = "number"
	ArgBoolean ArgType = "boolean"
)

// MaxArguments bounds the `arguments:` list: each one is a tool parameter
// and a slash-command field, and a form with more is not a prompt.
const MaxArguments = 32

// An Argument is one typed argument a prompt declares in `arguments:`.
type Argument struct {
	// Name follows the prompt-name rule, ^[a-z][a-z0-9_]{0,47}$: it is
	// typed by callers and read in Lua as params.NAME.
	Name        string
	Description string
	Type        ArgType
	Required    bool
	// Default is the value a run gets when the caller omits the argument:
	// string, float64 (integer and number) or bool; nil when none is
	// declared.
	Default any
}

type yamlArgument struct {
	Name        yamlNode `yaml:"name"`
	Description yamlNode `yaml:"description"`
	Type        yamlNode `yaml:"type"`
	Required    yamlNode `yaml:"required"`
	Default     yamlNode `yaml:"default"`
}

// arguments decodes the `arguments:` list.
func (d fmDecoder) arguments(y yamlNode) ([]Argument, *ParseError) {
	if y.n == nil {
		return nil, nil
	}
	seq, ok := y.n.(*ast.SequenceNode)
	if !ok {
		v, perr := d.value(y.n)
		if perr != nil {
			return nil, perr
		}
		return nil, d.fieldError(y.n, "`arguments` must be a list of mappings with `name`, `type`, `description`, `required` and `default`, got %s", yamlTypeName(v))
	}
	if len(seq.Values) > MaxArguments {
		return nil, d.fieldError(y.n, "`arguments` declares %d arguments, over the limit of %d", len(seq.Values), MaxArguments)
	}
	if len(seq.Values) == 0 {
		// An empty list declares nothing: the prompt keeps the raw args.
		return nil, nil
	}
	out := make([]Argument, 0, len(seq.Values))
	seen := make(map[string]bool, len(seq.Values))
	for i, n := range seq.Values {
		a, perr := d.argument(i, n)
		if perr != nil {
			return nil, perr
		}
		if seen[a.Name] {
			return nil, d.fieldError(n, "argument %q is declared twice; give each argument its own name", a.Name)
		}
		seen[a.Name] = true
		out = append(out, a)
	}
	return out, nil
}

func (d fmDecoder) argument(i int, n ast.Node) (Argument, *ParseError) {
	key := fmt.Sprintf("arguments[%d]", i)
	if n.Type() != ast.MappingType {
		v, perr := d.value(n)
		if perr != nil {
			return Argument{}, perr
		}
		return Argument{}, d.fieldError(n, "`%s` must be a mapping with at least `name`, got %s", key, yamlTypeName(v))
	}
	var raw yamlArgument
	if err := yaml.NodeToValue(n, &raw, yaml.DisallowUnknownField()); err != nil {
		return Argument{}, d.yamlError(err)
	}
	at := func(perr *ParseError) *ParseError {
		if perr.Line == 0 {
			perr.Line = d.fileLine(n)
		}
		return perr
	}
	var a Argument
	name, _, perr := d.str(key+".name", raw.Name, true)
	if perr != nil {
		return Argument{}, at(perr)
	}
	if !names.ValidName(name) {
		return Argument{}, d.fieldError(raw.Name.n, "argument name %s must match ^[a-z][a-z0-9_]{0,47}$ (lowercase letters, digits and underscores, starting with a letter)", strconv.Quote(name))
	}
	a.Name = name
	if a.Description, _, perr = d.str(key+".description", raw.Description, false); perr != nil {
		return Argument{}, at(perr)
	}
	typ, given, perr := d.str(key+".type", raw.Type, false)
	if perr != nil {
		return Argument{}, at(perr)
	}
	switch ArgType(typ) {
	case ArgString, ArgInteger, ArgNumber, ArgBoolean:
		a.Type = ArgType(typ)
	default:
		if given {
			return Argument{}, d.fieldError(raw.Type.n, "argument %q has type %s; use string, integer, number or boolean", name, strconv.Quote(typ))
		}
		a.Type = ArgString
	}
	if raw.Required.n != nil {
		v, perr := d.value(raw.Required.n)
		if perr != nil {
			return Argument{}, perr
		}
		b, ok := v.(bool)
		if !ok {
			return Argument{}, d.fieldError(raw.Required.n, "`%s.required` must be true or false, got %s", key, yamlTypeName(v))
		}
		a.Required = b
	}
	if raw.Default.n != nil {
		v, perr := d.value(raw.Default.n)
		if perr != nil {
			return Argument{}, perr
		}
		def, ok := CoerceArgument(a.Type, v)
		if !ok {
			return Argument{}, d.fieldError(raw.Default.n, "the default of argument %q must be %s, got %s", name, a.Type.Phrase(), yamlTypeName(v))
		}
		if a.Required {
			return Argument{}, d.fieldError(raw.Default.n, "argument %q is required and has a default; a required argument is always given, so drop one of the two", name)
		}
		a.Default = def
	}
	return a, nil
}

// Phrase names the type in messages: "a string", "an integer", ...
func (t ArgType) Phrase() string {
	switch t {
	case ArgInteger:
		return "an integer"
	case ArgNumber:
		return "a number"
	case ArgBoolean:
		return "a boolean"
	}
	return "a string"
}

// CoerceArgument checks a decoded value (from YAML or JSON: string, bool,
// int, int64, uint64, float64, or json.Number-free float64) against t and
// returns it in the one form a run sees: string, float64 or bool. Integers
// must be whole and within ±2^53, where a Lua number is still exact.
func CoerceArgument(t ArgType, v any) (any, bool) {
	switch t {
	case ArgString:
		s, ok := v.(string)
		return s, ok
	case ArgBoolean:
		b, ok := v.(bool)
		return b, ok
	}
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float64:
		f = x
	default:
		return nil, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	if t == ArgInteger && (f != math.Trunc(f) || math.Abs(f) > 1<<53) {
		return nil, false
	}
	return f, true
}
