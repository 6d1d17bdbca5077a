package tools

import (
	"errors"
	"fmt"
)

// Kind classifies a tool failure (prompt-language §6.1). Every
// kind ends the run that made the call; the kind tells the caller whether
// the model's arguments, the backend, the network or the run itself was at
// fault.
type Kind uint8

const (
	// KindInvalidArguments: the call's arguments (or the URL they name) are
	// not acceptable; retrying the same call cannot succeed.
	KindInvalidArguments Kind = iota + 1
	// KindBackend: the service behind the tool answered with an error or an
	// unusable reply.
	KindBackend
	// KindTransport: the service could not be reached or did not answer in
	// time.
	KindTransport
	// KindCancelled: the caller's context ended while the tool was working.
	KindCancelled
	// KindOther: anything else.
	KindOther
)

func (k Kind) String() string {
	switch k {
	case KindInvalidArguments:
		return "invalid arguments"
	case KindBackend:
		return "backend"
	case KindTransport:
		return "transport"
	case KindCancelled:
		return "cancelled"
	case KindOther:
		return "other"
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// Error is a hard tool failure. Its message is written for the prompt
// author reading a failed run: it never carries an address the policy
// blocked, a query string, or a credential.
type Error struct {
	Kind Kind
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
func KindOf(err error) Kind {
	var te *Error
	if errors.As(err, &te) {
		return te.Kind
	}
	return KindOther
}

func invalidArgs(format string, a ...any) *Error {
	return &Error{Kind: KindInvalidArguments, Msg: fmt.Sprintf(format, a...)}
}

func cancelled(tool string, err error) *Error {
	return &Error{Kind: KindCancelled, Msg: tool + ": cancelled by the caller", Err: err}
}
