package store

import (
	"fmt"
	"strconv"
)

// Kind classifies a store failure so hosts can branch on it without
// parsing messages.
type Kind uint8

const (
	// KindNotFound: the path names no file.
	KindNotFound Kind = iota + 1
	// KindInvalidPath: the path breaks a prompt-language §4.3 rule.
	KindInvalidPath
	// KindInvalidGlob: the pattern breaks a prompt-language §4.3 rule.
	KindInvalidGlob
	// KindInvalidRange: the line bounds are inconsistent.
	KindInvalidRange
	// KindInvalidAnchor: str_replace was given an empty old text.
	KindInvalidAnchor
	// KindAnchorNotFound: str_replace's old text does not occur.
	KindAnchorNotFound
	// KindAnchorAmbiguous: str_replace's old text occurs more than once.
	KindAnchorAmbiguous
	// KindWriteRace: two arms of one fanout wrote the same path.
	KindWriteRace
)

// Error is every failure the store reports. Error() is the exact text a
// prompt author sees (the Lua layer raises it unchanged), so it carries no
// wrapping prefix of its own.
type Error struct {
	Kind Kind
	// Path is the store path or glob pattern the operation was given.
	Path string
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Is lets errors.Is(err, &store.Error{Kind: store.KindNotFound}) match on the
// kind alone, so callers need no sentinel values.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.msg == "" && t.Kind == e.Kind
}

func errNotFound(path string) error {
	return &Error{Kind: KindNotFound, Path: path, msg: "file not found: " + path}
}

func errInvalidPath(p, reason string) error {
	return &Error{Kind: KindInvalidPath, Path: p, msg: fmt.Sprintf("invalid path %q: %s", p, reason)}
}

func errInvalidGlob(p, reason string) error {
	return &Error{Kind: KindInvalidGlob, Path: p, msg: fmt.Sprintf("invalid glob pattern %q: %s", p, reason)}
}

func errInvalidAnchor(path string) error {
	return &Error{Kind: KindInvalidAnchor, Path: path,
		msg: "invalid anchor for " + path + ": the text to replace must not be empty"}
}

func errAnchorNotFound(path string) error {
	return &Error{Kind: KindAnchorNotFound, Path: path, msg: "anchor not found in " + path}
}

func errAnchorAmbiguous(path string, n int) error {
	return &Error{Kind: KindAnchorAmbiguous, Path: path,
		msg: "anchor occurs " + strconv.Itoa(n) + " times in " + path + ", expected exactly one"}
}

func errWriteRace(path string) error {
	return &Error{Kind: KindWriteRace, Path: path,
		msg: "write-write race on " + path + ": another arm of the same fanout already wrote it"}
}

func errInvalidRange(path string, r Range, reason string) error {
	return &Error{Kind: KindInvalidRange, Path: path,
		msg: "invalid line range " + r.String() + " for " + path + ": " + reason}
}

// String renders the bounds the caller gave, e.g. "3..7", "3..", "..7",
// so a range error shows exactly what was asked for.
func (r Range) String() string {
	var b []byte
	if r.HasStart {
		b = strconv.AppendInt(b, int64(r.Start), 10)
	}
	b = append(b, ".."...)
	if r.HasEnd {
		b = strconv.AppendInt(b, int64(r.End), 10)
	}
	return string(b)
}
