package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Boot steps: the outermost message of a failure report (mcp-server §1.2).
// check reports its failures with the same steps.
const (
	StepLoadConfig   = "load the configuration"
	StepResolve      = "resolve the prompt catalog"
	StepPrepareTools = "prepare the tool environment"
	StepWatch        = "start the prompt watcher"
	StepServe        = "serve the transport"
)

// StepError is a boot failure: the step that failed and why.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

func step(name string, err error) error { return &StepError{Step: name, Err: err} }

// WriteReport prints a boot failure the way an operator reads it: the
// failed step, then one "caused by" line per link of the error chain, each
// link's own message without the text of the links below it. A message
// spanning several lines (a catalog's fault list) is printed as it is.
func WriteReport(w io.Writer, err error) {
	if err == nil {
		return
	}
	var se *StepError
	if errors.As(err, &se) {
		fmt.Fprintf(w, "error: %s\n", se.Step)
		err = se.Err
	} else {
		fmt.Fprintf(w, "error: %s\n", ownMessage(err))
		err = errors.Unwrap(err)
	}
	for ; err != nil; err = errors.Unwrap(err) {
		fmt.Fprintf(w, "  caused by: %s\n", ownMessage(err))
	}
}

// ownMessage is err's message minus the ": <cause>" its wrapping appended.
func ownMessage(err error) string {
	msg := err.Error()
	if next := errors.Unwrap(err); next != nil {
		if own, ok := strings.CutSuffix(msg, ": "+next.Error()); ok {
			return own
		}
	}
	return msg
}

// osCause is the operating system's own error under a net.OpError (for
// "address already in use"), so a report does not repeat the address and
// the operation in layers; other errors are returned as they are.
func osCause(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}
