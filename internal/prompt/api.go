package prompt

import "fmt"

// ErrorKind classifies a ParseError.
type ErrorKind uint8

const (
	KindFrontmatter ErrorKind = iota + 1 // missing/unclosed/invalid frontmatter, unknown keys, bad values
	KindStructure                        // H1 rules, nesting, duplicates, "not a promptforge prompt"
	KindFence                            // unclosed/misplaced fences, the removed `lua prompt` form
	KindLua                              // Lua compilation errors
	KindList                             // empty bullet in a list section
)

// ParseError is every failure of [Parse]. Error() gives Msg; Line (1-based
// file line, 0 when unknown) and Kind let hosts point an author at the fix.
//
// For a Lua compilation error Line is the line gopher-lua blamed (the
// message names the chunk's first line). Span is set where the spec pins
// one (duplicate sibling headings).
type ParseError struct {
	Kind ErrorKind
	Line int
	Msg  string
	Err  error // underlying cause (YAML or Lua error), if any
	Span Span  // bytes of the original file the error points at, if any
}

func (e *ParseError) Error() string { return e.Msg }
func (e *ParseError) Unwrap() error { return e.Err }

// Parse turns the bytes of a prompt file into a Prompt, compiling every Lua
// block. It does not check the `promptforge:` version: running does.
// Every error is a *ParseError.
func Parse(src []byte) (*Prompt, error) { return ParseObserved(src, nil) }

// Version reads only the `promptforge:` key of a file's frontmatter. It
// reports ok=false when there is no frontmatter, the YAML is malformed or
// the key is absent; hosts use it to decide whether a .md file is a prompt.
func Version(src []byte) (major uint64, ok bool) {
	split, perr := splitFrontmatter(newSource(src).doc)
	if perr != nil {
		return 0, false
	}
	return probeVersion(split)
}

// TemplateErrorKind classifies a TemplateError.
type TemplateErrorKind uint8

const (
	TplUnclosed TemplateErrorKind = iota + 1
	TplBadPath
	TplEmptySegment
	TplUnknownNamespace
	TplNotATable
	TplMissingKey
	TplNullValue
	TplNilReply
	TplNilItem
	TplSerialize
	// TplTooLarge: the rendered block would exceed the host's size limit
	// (SubstituteMax).
	TplTooLarge
)

// TemplateError is a failed {{ }} substitution. Error() renders
// "<Msg> [<Kind> at byte <Offset>]".
type TemplateError struct {
	Kind   TemplateErrorKind
	Offset int // byte offset of the placeholder's "{{" in the template
	Msg    string
	Err    error // a resolver's own error, when Substitute wrapped one
}

func (e *TemplateError) Error() string {
	return fmt.Sprintf("%s [%s at byte %d]", e.Msg, e.Kind, e.Offset)
}

func (e *TemplateError) Unwrap() error { return e.Err }

// Path is a validated placeholder path: the first dot-segment and the rest.
type Path struct {
	Head string   // "args", "reply", "item", "var", "sys", or a global name
	Keys []string // remaining segments (never empty strings)
	Raw  string   // the trimmed inside of the placeholder, for messages
}

// Resolver renders one placeholder. It returns a *TemplateError (without
// Offset: Substitute fills it in) or any other error, which Substitute
// wraps as a TplSerialize TemplateError keeping it as Err. The helpers in
// render.go build the errors the spec pins (NilReplyError, MissingKeyError…).
type Resolver func(p Path) (string, error)

// Substitute runs the single left-to-right {{ path }} pass over text,
// handling the \{ \} \\ escapes. Substituted output is never rescanned.
// Every error is a *TemplateError.
func Substitute(text string, resolve Resolver) (string, error) {
	return substitute(text, resolve, 0)
}

// SubstituteMax is Substitute refusing, with a TplTooLarge error at the
// placeholder that crosses it, a result longer than maxBytes (no limit
// when maxBytes <= 0). It stops before building the oversized text, so a
// block that repeats a large value many times costs no more than the limit.
func SubstituteMax(text string, resolve Resolver, maxBytes int) (string, error) {
	return substitute(text, resolve, maxBytes)
}
