package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/promptforge-go/promptforge/internal/app"
)

const testUsage = `usage: promptforge-mcp-server test [-run PATTERN] [-update] [-v] [PATH...]

Runs prompt tests (NAME.test.yaml beside NAME.md; docs/testing-prompts.md)
on an in-process scripted gateway: no model, no network. A PATH is a
directory (searched for *.test.yaml), a prompt, a test file, or a
prompts.toml (the tests beside its prompts); the default is ".".

  -run PATTERN  run only the tests whose "<prompt>/<test>" matches PATTERN
  -update       record each test's current value, error and store as its
                expectations (the file is rewritten; comments are lost)
  -v            also list the tests that pass

Exit 0 when every test passes, 1 when one fails, 2 on a bad command line.
`

type testFlags struct {
	run             string
	update, verbose bool
	paths           []string
}

// parseTestFlags takes go test's spelling (-run, -update, -v) and the
// double-dash one; flags may come anywhere before "--".
func parseTestFlags(args []string) (testFlags, error) {
	var f testFlags
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			f.paths = append(f.paths, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			f.paths = append(f.paths, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		name = strings.TrimPrefix(name, "-")
		switch name {
		case "update", "v":
			if hasVal {
				return f, usageError{fmt.Sprintf("-%s takes no value", name)}
			}
			if name == "v" {
				f.verbose = true
			} else {
				f.update = true
			}
		case "run":
			v, err := flagValue(args, &i, "-run", val, hasVal)
			if err != nil {
				return f, err
			}
			f.run = v
		default:
			return f, usageError{fmt.Sprintf("unknown flag %q for test", a)}
		}
	}
	if len(f.paths) == 0 {
		f.paths = []string{"."}
	}
	return f, nil
}

func cmdTest(ctx context.Context, argv []string, stdout, stderr io.Writer, lookup env) int {
	f, err := parseTestFlags(argv)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n\n%s", err, testUsage)
		return exitUsage
	}
	logger, code := prologue(stderr, lookup, nil, "", "warn")
	if logger == nil {
		return code
	}
	err = app.Test(ctx, app.TestOptions{Paths: f.paths, Run: f.run, Update: f.update, Verbose: f.verbose, Stdout: stdout, Logger: logger, LookupEnv: lookup})
	switch {
	case errors.Is(err, app.ErrTestsFailed):
		return exitFailure
	case err != nil:
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFailure
	}
	return exitOK
}
