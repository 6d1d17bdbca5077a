package prompt

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Bounds of max_tool_iterations. The upper bound keeps a typo (10000 for
// 100) from turning one prose block into an unbounded bill.
const (
	minToolIterations = 1
	maxToolIterations = 1000
)

// fmSplit locates the frontmatter in a normalised document.
type fmSplit struct {
	yaml      []byte
	yamlLine  int // file line of the first YAML line
	bodyStart int // byte offset of the body in the document
	bodyLine  int // file line of the body's first line
}

// splitFrontmatter finds the --- delimited YAML header. doc must already be
// BOM-stripped and use \n line endings.
func splitFrontmatter(doc []byte) (fmSplit, *ParseError) {
	first, rest, _ := bytes.Cut(doc, []byte("\n"))
	if string(bytes.TrimSpace(first)) != "---" {
		return fmSplit{}, &ParseError{Kind: KindFrontmatter, Line: 1,
			Msg: "file must begin with a --- frontmatter delimiter"}
	}
	yamlStart := len(first) + 1
	off := yamlStart
	line := 2
	for off <= len(doc) && len(rest) > 0 {
		l, next, found := bytes.Cut(rest, []byte("\n"))
		if string(bytes.TrimSpace(l)) == "---" {
			end := off + len(l)
			if found {
				end++
			}
			return fmSplit{
				yaml:      doc[yamlStart:off],
				yamlLine:  2,
				bodyStart: end,
				bodyLine:  line + 1,
			}, nil
		}
		off += len(l) + 1
		line++
		rest = next
	}
	return fmSplit{}, &ParseError{Kind: KindFrontmatter, Line: 1,
		Msg: "frontmatter was not closed with ---"}
}

// yamlNode captures a value's YAML node so types and bounds are checked by
// us, with the key name in the message: goccy would otherwise coerce 1.5
// into an unsigned integer or 123 into a string without complaint.
type yamlNode struct{ n ast.Node }

func (y *yamlNode) UnmarshalYAML(n ast.Node) error {
	y.n = n
	return nil
}

type yamlFrontmatter struct {
	Name              yamlNode `yaml:"name"`
	Description       yamlNode `yaml:"description"`
	Promptforge       yamlNode `yaml:"promptforge"`
	MaxToolIterations yamlNode `yaml:"max_tool_iterations"`
	Input             yamlNode `yaml:"input"`
	Output            yamlNode `yaml:"output"`
	Arguments         yamlNode `yaml:"arguments"`
}

type yamlFileDecl struct {
	Path        yamlNode `yaml:"path"`
	Description yamlNode `yaml:"description"`
}

// fmDecoder decodes one frontmatter block, mapping YAML lines to file lines.
type fmDecoder struct {
	yamlLine int
}

func (d fmDecoder) fileLine(n ast.Node) int {
	if n == nil || n.GetToken() == nil {
		return 0
	}
	return n.GetToken().Position.Line + d.yamlLine - 1
}

func (d fmDecoder) yamlError(err error) *ParseError {
	pe := &ParseError{Kind: KindFrontmatter, Err: err}
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg := ye.GetMessage()
		if tok := ye.GetToken(); tok != nil {
			pe.Line = tok.Position.Line + d.yamlLine - 1
			pe.Msg = fmt.Sprintf("invalid frontmatter: %s (line %d, column %d)", msg, pe.Line, tok.Position.Column)
			return pe
		}
		pe.Msg = "invalid frontmatter: " + msg
		return pe
	}
	pe.Msg = "invalid frontmatter: " + err.Error()
	return pe
}

func (d fmDecoder) fieldError(n ast.Node, format string, args ...any) *ParseError {
	return &ParseError{Kind: KindFrontmatter, Line: d.fileLine(n),
		Msg: "invalid frontmatter: " + fmt.Sprintf(format, args...)}
}

// value decodes a captured node into a plain Go value with YAML semantics
// (tags, anchors) applied.
func (d fmDecoder) value(n ast.Node) (any, *ParseError) {
	var v any
	if err := yaml.NodeToValue(n, &v); err != nil {
		return nil, d.yamlError(err)
	}
	return v, nil
}

func (d fmDecoder) str(key string, y yamlNode, required bool) (string, bool, *ParseError) {
	if y.n == nil {
		if required {
			return "", false, &ParseError{Kind: KindFrontmatter,
				Msg: fmt.Sprintf("invalid frontmatter: missing required key `%s`", key)}
		}
		return "", false, nil
	}
	v, perr := d.value(y.n)
	if perr != nil {
		return "", false, perr
	}
	s, ok := v.(string)
	if !ok {
		return "", false, d.fieldError(y.n, "`%s` must be a string, got %s", key, yamlTypeName(v))
	}
	return s, true, nil
}

// integer returns the node as an integer. A literal too large for int64
// comes back as over (its source text) so bounds messages can quote it.
func (d fmDecoder) integer(key string, y yamlNode) (n int64, over string, perr *ParseError) {
	v, perr := d.value(y.n)
	if perr != nil {
		return 0, "", perr
	}
	switch v := v.(type) {
	case int64:
		return v, "", nil
	case int:
		return int64(v), "", nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, strconv.FormatUint(v, 10), nil
		}
		return int64(v), "", nil
	case string:
		// goccy hands back plain integer literals beyond 64 bits as strings.
		if isPlainIntegerLiteral(y.n, v) {
			return 0, v, nil
		}
	}
	return 0, "", d.fieldError(y.n, "`%s` must be an integer, got %s", key, yamlTypeName(v))
}

func (d fmDecoder) fileDecl(key string, y yamlNode) (*FileDecl, *ParseError) {
	if y.n == nil {
		return nil, nil
	}
	if y.n.Type() != ast.MappingType {
		v, perr := d.value(y.n)
		if perr != nil {
			return nil, perr
		}
		return nil, d.fieldError(y.n, "`%s` must be a mapping with `path` and `description`, got %s", key, yamlTypeName(v))
	}
	var raw yamlFileDecl
	if err := yaml.NodeToValue(y.n, &raw, yaml.DisallowUnknownField()); err != nil {
		return nil, d.yamlError(err)
	}
	path, _, perr := d.str(key+".path", raw.Path, true)
	if perr != nil {
		perr.Line = d.fileLine(y.n)
		return nil, perr
	}
	desc, _, perr := d.str(key+".description", raw.Description, true)
	if perr != nil {
		perr.Line = d.fileLine(y.n)
		return nil, perr
	}
	return &FileDecl{Path: path, Description: desc}, nil
}

// decodeFrontmatter is the strict decoder Parse uses.
func decodeFrontmatter(s fmSplit) (Frontmatter, *ParseError) {
	if fm, ok := plainFrontmatter(s.yaml); ok {
		return fm, nil
	}
	return decodeYAMLFrontmatter(s)
}

// decodeYAMLFrontmatter decodes any frontmatter with goccy.
func decodeYAMLFrontmatter(s fmSplit) (Frontmatter, *ParseError) {
	d := fmDecoder{yamlLine: s.yamlLine}
	var raw yamlFrontmatter
	if err := yaml.UnmarshalWithOptions(s.yaml, &raw, yaml.DisallowUnknownField()); err != nil {
		return Frontmatter{}, d.yamlError(err)
	}
	var fm Frontmatter
	var perr *ParseError
	if fm.Name, _, perr = d.str("name", raw.Name, true); perr != nil {
		return Frontmatter{}, perr
	}
	if fm.Description, _, perr = d.str("description", raw.Description, true); perr != nil {
		return Frontmatter{}, perr
	}
	if raw.Promptforge.n != nil {
		v, perr := d.version(raw.Promptforge)
		if perr != nil {
			return Frontmatter{}, perr
		}
		fm.Version, fm.HasVersion = v, true
	}
	if raw.MaxToolIterations.n != nil {
		n, over, perr := d.integer("max_tool_iterations", raw.MaxToolIterations)
		if perr != nil {
			return Frontmatter{}, perr
		}
		switch {
		case strings.HasPrefix(over, "-"):
			return Frontmatter{}, d.fieldError(raw.MaxToolIterations.n,
				"max_tool_iterations must be a positive integer (>= 1), got %s", over)
		case over != "":
			return Frontmatter{}, d.fieldError(raw.MaxToolIterations.n,
				"max_tool_iterations must be <= %d, got %s", maxToolIterations, over)
		case n < minToolIterations:
			return Frontmatter{}, d.fieldError(raw.MaxToolIterations.n,
				"max_tool_iterations must be a positive integer (>= 1), got %d", n)
		case n > maxToolIterations:
			return Frontmatter{}, d.fieldError(raw.MaxToolIterations.n,
				"max_tool_iterations must be <= %d, got %d", maxToolIterations, n)
		}
		fm.MaxToolIterations = int(n)
	}
	if fm.Input, perr = d.fileDecl("input", raw.Input); perr != nil {
		return Frontmatter{}, perr
	}
	if fm.Output, perr = d.fileDecl("output", raw.Output); perr != nil {
		return Frontmatter{}, perr
	}
	if fm.Arguments, perr = d.arguments(raw.Arguments); perr != nil {
		return Frontmatter{}, perr
	}
	return fm, nil
}

func isPlainIntegerLiteral(n ast.Node, v string) bool {
	tok := n.GetToken()
	if tok == nil || tok.Type == token.DoubleQuoteType || tok.Type == token.SingleQuoteType {
		return false
	}
	digits := strings.TrimPrefix(strings.TrimPrefix(v, "-"), "+")
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// version checks the promptforge key: an unsigned 64-bit integer.
func (d fmDecoder) version(y yamlNode) (uint64, *ParseError) {
	n, over, perr := d.integer("promptforge", y)
	if perr != nil {
		return 0, perr
	}
	if over != "" && !strings.HasPrefix(over, "-") {
		if v, err := strconv.ParseUint(over, 10, 64); err == nil {
			return v, nil
		}
	}
	if n < 0 || over != "" {
		if over == "" {
			over = strconv.FormatInt(n, 10)
		}
		return 0, d.fieldError(y.n,
			"`promptforge` must be an unsigned integer (the engine major, e.g. 1), got %s", over)
	}
	return uint64(n), nil
}

// probeVersion is the lenient reader behind Version: unknown keys and
// missing name/description are fine, anything unreadable is "no version".
func probeVersion(s fmSplit) (uint64, bool) {
	var raw struct {
		Promptforge yamlNode `yaml:"promptforge"`
	}
	if err := yaml.Unmarshal(s.yaml, &raw); err != nil || raw.Promptforge.n == nil {
		return 0, false
	}
	v, perr := fmDecoder{yamlLine: s.yamlLine}.version(raw.Promptforge)
	return v, perr == nil
}

func yamlTypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64:
		return fmt.Sprintf("the integer %v", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case []any:
		return "a sequence"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}

// plainFrontmatter decodes the commonest frontmatter without the YAML
// parser: only `name`, `description` and `promptforge` keys, each once, one
// per line at column 0, the two strings plain scalars that YAML can only
// read as the same string (see plainString) and the version a plain
// decimal. It reports false for anything else, which decodeFrontmatter
// hands to goccy, so every diagnosis stays goccy's. On a 10,000-prompt
// catalog the YAML parser was more than half of parsing a short prompt,
// and the catalog's boot parses every file
// (TestPlainFrontmatterDecodesAsYAML compares the two).
func plainFrontmatter(src []byte) (Frontmatter, bool) {
	var fm Frontmatter
	var seen [3]bool
	for len(src) > 0 {
		line, rest, found := bytes.Cut(src, []byte("\n"))
		if !found {
			return Frontmatter{}, false
		}
		src = rest
		key, value, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			return Frontmatter{}, false
		}
		value = bytes.TrimRight(bytes.TrimLeft(value, " "), " ")
		var k int
		switch string(key) {
		case "name":
			k = 0
			fm.Name, ok = plainString(value)
		case "description":
			k = 1
			fm.Description, ok = plainString(value)
		case "promptforge":
			k = 2
			fm.Version, ok = plainVersion(value)
			fm.HasVersion = ok
		default:
			return Frontmatter{}, false
		}
		if !ok || seen[k] {
			return Frontmatter{}, false
		}
		seen[k] = true
	}
	return fm, seen[0] && seen[1]
}

// plainString returns v as the string a plain YAML scalar spells when it
// can mean nothing else: it starts with an ASCII letter (so it is no
// number, indicator, quote, tag, anchor or alias), holds only letters,
// digits, spaces and punctuation that is never syntax inside a block plain
// scalar (no ':', '#', quotes, brackets, braces, backslash or tab), and is
// no word YAML 1.1 or 1.2 reads as a boolean or null.
func plainString(v []byte) (string, bool) {
	if len(v) == 0 || !isASCIILetter(v[0]) {
		return "", false
	}
	for _, c := range v {
		switch {
		case isASCIILetter(c), c >= '0' && c <= '9', c == ' ':
		case strings.IndexByte("_-.,;()/?!+=*&%$@^~<>|", c) >= 0:
		default:
			return "", false
		}
	}
	switch strings.ToLower(string(v)) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf", "infinity":
		return "", false
	}
	return string(v), true
}

// plainVersion reads a decimal without sign or leading zero (YAML 1.1
// reads 010 as octal) short enough never to overflow.
func plainVersion(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 9 || v[0] < '1' || v[0] > '9' {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
