package tools

import (
	"errors"
	"fmt"
)

// ErrorKind classifies a tool failure (spec prompt-language §6.1). Every
// kind ends the run that made the call; the kind tells the caller whether
// the model's arguments, the backend, the network or the run itself was at
// fault.
type ErrorKind uint8

const (
	// InvalidArguments: the call's arguments (or the URL they name) are
	// not acceptable; retrying the same call cannot succeed.
	InvalidArguments ErrorKind = iota + 1
	// Backend: the service behind the tool answered with an error or an
	// unusable reply.
	Backend
	// Transport: the service could not be reached or did not answer in
	// time.
	Transport
	// Cancelled: the caller's context ended while the tool was working.
	Cancelled
	// Other: anything else.
	Other
)

func (k ErrorKind) String() string {
	switch k {
	case InvalidArguments:
		return "invalid arguments"
	case Backend:
		return "backend"
	case Transport:
		return "transport"
	case Cancelled:
		return "cancelled"
	case Other:
		return "other"
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// Error is a hard tool failure. Its message is written for the prompt
// author reading a failed run: it never carries an address the policy
// blocked, a query string, or a credential.
type Error struct {
	Kind ErrorKind
	// Msg is the whole message, already prefixed with the tool's wire
	// name (e.g. "web_fetch: port not allowed: 8080").
	Msg string
	// Err is the underlying cause, if any, for errors.Is/As.
	Err error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of the first *Error in err's chain, or Other
// when there is none.
func KindOf(err error) ErrorKind {
	var te *Error
	if errors.As(err, &te) {
		return te.Kind
	}
	return Other
}

func invalidArgs(format string, a ...any) *Error {
	return &Error{Kind: InvalidArguments, Msg: fmt.Sprintf(format, a...)}
}

func cancelled(tool string, err error) *Error {
	return &Error{Kind: Cancelled, Msg: tool + ": cancelled by the caller", Err: err}
}
