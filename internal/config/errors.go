package config

import (
	"fmt"
	"strconv"
)

// Kind classifies a load failure the way mcp-server §2.1 does, so callers can
// branch on it (the watcher keeps the previous catalog whatever the kind,
// tests pin the kind) without parsing messages.
type Kind int

const (
	// KindRead: the file could not be opened or read, or is not UTF-8.
	KindRead Kind = iota + 1
	// KindParse: TOML syntax, the size cap, unknown keys, wrong types and
	// every validation rule except the [server].api_key blank check.
	KindParse
	// KindEmptyToken: [server].api_key is present but blank.
	KindEmptyToken
	// KindUnresolvedVar: a ${NAME} names a variable that is set neither in
	// the process environment nor in the env file.
	KindUnresolvedVar
	// KindInterpolation: a ${ without its closing }.
	KindInterpolation
)

// String names the kind for logs and test failures.
func (k Kind) String() string {
	switch k {
	case KindRead:
		return "read"
	case KindParse:
		return "parse"
	case KindEmptyToken:
		return "empty token"
	case KindUnresolvedVar:
		return "unresolved variable"
	case KindInterpolation:
		return "interpolation"
	default:
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
}

// Error is every failure [Loader.Load] and [Parse] return. Its message starts
// with the phrase mcp-server §2.1 pins for its kind (`read config <path>`,
// `parse config: ...`, `[server].api_key must not be empty`, `unresolved
// environment variable <NAME>`, `interpolation: ...`) and goes on to say
// where the problem is and what to change.
type Error struct {
	Kind Kind
	// Path is the configuration file for KindRead and KindParse errors
	// raised by Loader.Load; empty for the other kinds and for Parse.
	Path string
	// Line is the 1-based line in the configuration file the problem is on,
	// or 0 when no single line is to blame.
	Line int
	// Key is the setting at fault in TOML notation ("[server].bind",
	// `[models."llama3"].context`), or empty.
	Key string
	// Var is the variable a KindUnresolvedVar error could not resolve.
	Var string
	// Detail is the kind-specific part of the message.
	Detail string
	// Err is the underlying cause (the OS error for KindRead, the TOML
	// decoder's error for syntax failures), or nil.
	Err error
}

// Error renders the message. A KindRead error appends its OS cause, the Go
// way, so a log line carrying only this error still says why the file could
// not be read; a failure report that prints the cause chain link by link can
// strip the ": "+cause suffix.
func (e *Error) Error() string {
	switch e.Kind {
	case KindRead:
		msg := "read config " + e.Path
		if e.Err != nil {
			msg += ": " + e.Err.Error()
		}
		return msg
	case KindEmptyToken:
		return e.Detail
	case KindUnresolvedVar:
		return "unresolved environment variable " + e.Var + e.where() + ": " + e.Detail
	case KindInterpolation:
		return "interpolation: " + e.Detail + e.where()
	default:
		return "parse config: " + e.location() + e.Detail
	}
}

// Unwrap exposes the cause so errors.Is(err, fs.ErrNotExist) and
// errors.As(err, **toml.DecodeError) work through an *Error.
func (e *Error) Unwrap() error { return e.Err }

// location prefixes a Parse-kind detail the way compilers do, so the
// operator can jump to the line.
func (e *Error) location() string {
	switch {
	case e.Path != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: ", e.Path, e.Line)
	case e.Path != "":
		return e.Path + ": "
	case e.Line > 0:
		return fmt.Sprintf("line %d: ", e.Line)
	default:
		return ""
	}
}

// where says which setting referenced a variable; interpolation errors have
// no path of their own (mcp-server §11, error.rs), so the key and line locate
// them.
func (e *Error) where() string {
	switch {
	case e.Key != "" && e.Line > 0:
		return fmt.Sprintf(" (in %s on line %d)", e.Key, e.Line)
	case e.Key != "":
		return " (in " + e.Key + ")"
	default:
		return ""
	}
}
