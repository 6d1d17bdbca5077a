package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/promptforge-go/promptforge/internal/app"
)

// serveFlags is the parsed command line of "serve".
type serveFlags struct {
	stdio      bool
	offline    bool // check only
	logLevel   string
	configPath string
}

// parseServeFlags accepts `[--stdio] [--log-level L] <prompts.toml>`.
func parseServeFlags(args []string) (serveFlags, error) {
	return parseConfigFlags("serve", args, true)
}

// parseConfigFlags parses the command lines of serve and check, which take
// one prompts.toml: `[--stdio] [--log-level L] <prompts.toml>`, --stdio
// only where withStdio. Flags come before the path; "--" ends them, so a
// config may be named "-x". A flag after the path is refused like any
// extra argument, as the reference refuses `serve prompts.toml --stdio`.
func parseConfigFlags(cmd string, args []string, withStdio bool) (serveFlags, error) {
	var f serveFlags
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case name == "--stdio" && withStdio:
			if hasVal {
				return f, usageError{"--stdio takes no value"}
			}
			f.stdio = true
		case name == "--offline" && cmd == "check":
			if hasVal {
				return f, usageError{"--offline takes no value"}
			}
			f.offline = true
		case name == "--log-level":
			v, err := flagValue(args, &i, name, val, hasVal)
			if err != nil {
				return f, err
			}
			f.logLevel = v
		default:
			return f, usageError{fmt.Sprintf("unknown flag %q for %s", a, cmd)}
		}
	}
	rest := args[i:]
	switch len(rest) {
	case 0:
		return f, usageError{cmd + " needs the path of prompts.toml"}
	case 1:
		f.configPath = rest[0]
		return f, nil
	default:
		return f, usageError{fmt.Sprintf("%s takes one prompts.toml and nothing after it, got %q (flags go before the path)", cmd, rest[1:])}
	}
}

// cmdServe boots the MCP server. Logs go to stderr on both transports, so
// stdout is the JSON-RPC wire on stdio and stays clean on HTTP.
func cmdServe(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, lookup env) int {
	f, err := parseServeFlags(argv)
	logger, code := prologue(stderr, lookup, err, f.logLevel, "")
	if logger == nil {
		return code
	}
	opts := app.BootOptions{
		ConfigPath: f.configPath,
		Transport:  app.HTTP,
		Logger:     logger,
		LookupEnv:  lookup,
		Stdin:      stdin,
		Stdout:     stdout,
		Version:    version,
	}
	if f.stdio {
		opts.Transport = app.Stdio
	}
	// An operator's GOGC is theirs; otherwise keep the heap floor.
	if _, set := lookup("GOGC"); !set {
		defer heapFloor(heapFloorBytes)()
	}
	if err := app.Boot(ctx, opts); err != nil {
		if ctx.Err() != nil {
			// A signal during boot is an operator stopping the server, not a
			// failure: whatever step it interrupted is not worth reporting.
			logger.Info("stopped by a signal before serving", "step", stepOf(err))
			return exitOK
		}
		app.WriteReport(stderr, err)
		return exitFailure
	}
	return exitOK
}

// stepOf names the boot step err failed in, "" when it names none.
func stepOf(err error) string {
	var se *app.StepError
	if errors.As(err, &se) {
		return se.Step
	}
	return ""
}
