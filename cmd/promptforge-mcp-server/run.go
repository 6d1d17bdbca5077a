package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/promptforge-go/promptforge/internal/app"
)

// runFlags is the parsed command line of "run".
type runFlags struct {
	config, input, output, logLevel string
	target                          string // prompt file or catalog name
	args                            string
	storeDir                        string
	watch, dump, captureRaw         bool
}

// parseRunFlags accepts flags anywhere before "--" so that
// `run p.md --input x` and `run --input x p.md` both work; an argument that
// starts with "-" after "--" is positional.
func parseRunFlags(args []string) (runFlags, error) {
	var f runFlags
	var pos []string
	takes := map[string]*string{"--config": &f.config, "--input": &f.input, "--output": &f.output, "--log-level": &f.logLevel, "--store-dir": &f.storeDir}
	switches := map[string]*bool{"--watch": &f.watch, "--dump": &f.dump, "--capture-raw": &f.captureRaw}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		if sw, ok := switches[name]; ok {
			if hasVal {
				return f, usageError{fmt.Sprintf("%s takes no value", name)}
			}
			*sw = true
			continue
		}
		dst, ok := takes[name]
		if !ok {
			return f, usageError{fmt.Sprintf("unknown flag %q for run (to pass an argument that starts with '-', put it after --)", a)}
		}
		v, err := flagValue(args, &i, name, val, hasVal)
		if err != nil {
			return f, err
		}
		*dst = v
	}
	switch len(pos) {
	case 0:
		return f, usageError{"run needs a prompt file (ending in .md) or, with --config, a prompt name"}
	case 1:
		f.target = pos[0]
	case 2:
		f.target, f.args = pos[0], pos[1]
	default:
		return f, usageError{fmt.Sprintf("run takes one prompt and at most one args string, got %d extra arguments (quote the args)", len(pos)-2)}
	}
	return f, nil
}

func cmdRun(ctx context.Context, argv []string, stdout, stderr io.Writer, lookup env) int {
	f, err := parseRunFlags(argv)
	// On a terminal the log goes through the status line, which keeps
	// itself below the log's lines.
	var status *app.StatusLine
	if isTerminal(stderr) {
		status = app.NewStatusLine(stderr)
		stderr = status
	}
	logger, code := prologue(stderr, lookup, err, f.logLevel, "")
	if logger == nil {
		return code
	}
	if f.config == "" && !strings.HasSuffix(f.target, ".md") {
		usage(stderr, usageError{fmt.Sprintf("%q is not a prompt file (it does not end in .md); naming a catalog prompt needs --config", f.target)})
		return exitUsage
	}
	opts := app.RunOptions{
		Target:     f.target,
		Args:       f.args,
		ConfigPath: f.config,
		Input:      f.input,
		Output:     f.output,
		Logger:     logger,
		LookupEnv:  lookup,
		Warnings:   stderr,
		Dev: app.DevOptions{
			Dump:       f.dump || f.storeDir != "", // and --watch: app.Watch implies it
			StoreDir:   f.storeDir,
			CaptureRaw: f.captureRaw,
			Status:     status,
		},
	}
	if f.watch {
		err := app.Watch(ctx, opts, func(value string, err error) {
			if err != nil {
				// The Ctrl-C that cancelled this run is reported once, below.
				if !app.Interrupted(ctx, err) {
					printError(stderr, err)
				}
				return
			}
			printValue(stdout, value)
		})
		if app.Interrupted(ctx, err) {
			// A run in progress was cancelled and waited for; an idle
			// watch just stops.
			fmt.Fprintln(stderr, "interrupted: stopped watching")
			return exitInterrupted
		}
		printError(stderr, err)
		return exitFailure
	}
	value, err := app.RunOnce(ctx, opts)
	switch {
	case err != nil && app.Interrupted(ctx, err):
		fmt.Fprintln(stderr, "interrupted: the run was cancelled")
		return exitInterrupted
	case err != nil:
		printError(stderr, err)
		return exitFailure
	}
	printValue(stdout, value)
	return exitOK
}

func printValue(stdout io.Writer, value string) {
	io.WriteString(stdout, value)
	if !strings.HasSuffix(value, "\n") {
		io.WriteString(stdout, "\n")
	}
}

// printError writes a run's failure: one that maps to a prompt line
// starts with "file:line: ", as compilers write theirs, so an editor or a
// terminal can jump to it; others start with "error: ".
func printError(stderr io.Writer, err error) {
	var le *app.LocatedError
	if errors.As(err, &le) && le.Line > 0 {
		fmt.Fprintf(stderr, "%v\n", err)
		return
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
}

// isTerminal reports whether w is a terminal, which gets the live status
// line; a pipe or a file gets plain log lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
