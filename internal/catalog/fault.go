package catalog

import (
	"strconv"
	"strings"
)

// Kind classifies a Fault, and says why a broken Entry is broken.
type Kind uint8

const (
	// KindPattern: an include pattern is malformed or its directories
	// could not be read.
	KindPattern Kind = iota + 1
	// KindUnreadable: the file could not be read, is over the size cap,
	// or resolves outside the prompts directory.
	KindUnreadable
	// KindUnparsable: the file is a prompt but does not parse.
	KindUnparsable
	// KindInvalidName: the frontmatter name breaks the naming rules.
	KindInvalidName
	// KindDuplicate: two healthy prompts declare one name.
	KindDuplicate
	// KindStaleOverride: a [prompts.NAME] block without a file names no
	// prompt.
	KindStaleOverride
	// KindEmpty: nothing resolved at all.
	KindEmpty
)

func (k Kind) String() string {
	switch k {
	case KindPattern:
		return "Pattern"
	case KindUnreadable:
		return "Unreadable"
	case KindUnparsable:
		return "Unparsable"
	case KindInvalidName:
		return "InvalidName"
	case KindDuplicate:
		return "Duplicate"
	case KindStaleOverride:
		return "StaleOverride"
	case KindEmpty:
		return "Empty"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// A Fault is one reason a resolution pass failed. Prompt and Path are the
// locus (either may be empty); Detail says what is wrong.
type Fault struct {
	Kind   Kind
	Prompt string
	Path   string
	Detail string
}

// String renders the fault with whatever locus it has:
// "<prompt> (<path>): <detail>", "<prompt>: <detail>", "<path>: <detail>"
// or just "<detail>".
func (f Fault) String() string {
	switch {
	case f.Prompt != "" && f.Path != "":
		return f.Prompt + " (" + f.Path + "): " + f.Detail
	case f.Prompt != "":
		return f.Prompt + ": " + f.Detail
	case f.Path != "":
		return f.Path + ": " + f.Detail
	}
	return f.Detail
}

// Class tells an operator where to look for the fix.
type Class uint8

const (
	// ClassBroken: at least one fault names a prompt or a file.
	ClassBroken Class = iota + 1
	// ClassConfiguration: every fault is about the catalog as a whole.
	ClassConfiguration
)

func (c Class) String() string {
	switch c {
	case ClassBroken:
		return "Broken"
	case ClassConfiguration:
		return "Configuration"
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// Error is a failed resolution pass. It always carries every fault the
// pass found, because the pass runs to completion before failing: an
// operator fixes them all in one round.
type Error struct {
	Faults []Fault
}

// Error renders "catalog has N fault(s)" followed by one line per fault,
// indented by two spaces, so a boot failure report prints it verbatim.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("catalog has ")
	b.WriteString(strconv.Itoa(len(e.Faults)))
	if len(e.Faults) == 1 {
		b.WriteString(" fault")
	} else {
		b.WriteString(" faults")
	}
	for _, f := range e.Faults {
		b.WriteString("\n  ")
		b.WriteString(f.String())
	}
	return b.String()
}

// Class is ClassBroken when any fault names a prompt or a path, else
// ClassConfiguration.
func (e *Error) Class() Class {
	for _, f := range e.Faults {
		if f.Prompt != "" || f.Path != "" {
			return ClassBroken
		}
	}
	return ClassConfiguration
}
