package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/promptforge-go/promptforge/internal/app"
)

// runFlags is the parsed command line of "run".
type runFlags struct {
	config, input, output, logLevel string
	target                          string // prompt file or catalog name
	args                            string
}

// parseRunFlags accepts flags anywhere before "--" so that
// `run p.md --input x` and `run --input x p.md` both work; an argument that
// starts with "-" after "--" is positional.
func parseRunFlags(args []string) (runFlags, error) {
	var f runFlags
	var pos []string
	takes := map[string]*string{"--config": &f.config, "--input": &f.input, "--output": &f.output, "--log-level": &f.logLevel}
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
		dst, ok := takes[name]
		if !ok {
			return f, usageError{fmt.Sprintf("unknown flag %q for run (to pass an argument that starts with '-', put it after --)", a)}
		}
		if !hasVal {
			if i+1 >= len(args) {
				return f, usageError{fmt.Sprintf("flag %s needs a value", name)}
			}
			i++
			val = args[i]
		}
		*dst = val
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
	logger, code := prologue(stderr, lookup, err, f.logLevel, "")
	if logger == nil {
		return code
	}
	if f.config == "" && !strings.HasSuffix(f.target, ".md") {
		usage(stderr, usageError{fmt.Sprintf("%q is not a prompt file (it does not end in .md); naming a catalog prompt needs --config", f.target)})
		return exitUsage
	}
	value, err := app.RunOnce(ctx, app.RunOptions{
		Target:     f.target,
		Args:       f.args,
		ConfigPath: f.config,
		Input:      f.input,
		Output:     f.output,
		Logger:     logger,
		LookupEnv:  lookup,
		Warnings:   stderr,
	})
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFailure
	}
	io.WriteString(stdout, value)
	if !strings.HasSuffix(value, "\n") {
		io.WriteString(stdout, "\n")
	}
	return exitOK
}
