package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/promptforge-go/promptforge/internal/logtext"
)

// usageError is a command line that cannot be run; it maps to exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// usage reports a command line that cannot be run, with the usage text.
func usage(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "error: %v\n\n%s", err, usageText)
}

// prologue is how every command starts: parseErr (the command line did
// not parse) is a usage error, and so is a log level that is not one.
// It returns the logger, or nil and the exit code when the command must
// stop. level is the --log-level flag; defaultLevel applies when neither
// the flag nor PROMPTFORGE_LOG chooses ("" is info).
func prologue(stderr io.Writer, lookup env, parseErr error, level, defaultLevel string) (*slog.Logger, int) {
	if parseErr != nil {
		usage(stderr, parseErr)
		return nil, exitUsage
	}
	logger, err := newLogger(stderr, level, defaultLevel, lookup)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return nil, exitUsage
	}
	return logger, exitOK
}

// newLogger builds the stderr logger at --log-level, else PROMPTFORGE_LOG,
// else defaultLevel, else info.
func newLogger(w io.Writer, flagLevel, defaultLevel string, lookup env) (*slog.Logger, error) {
	level := flagLevel
	if level == "" {
		level, _ = lookup("PROMPTFORGE_LOG")
	}
	if level == "" {
		level = defaultLevel
	}
	var l slog.Level
	if level != "" {
		if err := l.UnmarshalText([]byte(level)); err != nil {
			return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
		}
	}
	// logtext writes what slog.TextHandler writes, for less CPU per
	// line: every run logs two (docs/benchmarks.md, "The stdio fast lane").
	return slog.New(logtext.New(w, &slog.HandlerOptions{Level: l})), nil
}

// flagValue is the value of flag name at args[*i]: the part after "=" when
// there was one (hasVal), else the next argument, which *i moves past.
func flagValue(args []string, i *int, name, val string, hasVal bool) (string, error) {
	if hasVal {
		return val, nil
	}
	if *i+1 >= len(args) {
		return "", usageError{fmt.Sprintf("flag %s needs a value", name)}
	}
	*i++
	return args[*i], nil
}
