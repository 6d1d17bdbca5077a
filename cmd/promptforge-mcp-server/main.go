// Command promptforge-mcp-server serves a catalog of PromptForge prompts to
// MCP clients and runs single prompts from the terminal.
//
// The command parses the command line, builds the logger, handles signals
// and maps outcomes to exit codes; internal/app assembles and runs
// everything else, and is the only package of ours it imports.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes (design §2).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitInterrupted is a run stopped by Ctrl-C (128 + SIGINT), as
	// shells report it.
	exitInterrupted = 130
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

const usageText = `usage:
  promptforge-mcp-server serve [--stdio] [--log-level L] <prompts.toml>
  promptforge-mcp-server run [--config prompts.toml] [--input F] [--output F] [--watch] [--dump]
      [--store-dir D] [--capture-raw] <prompt.md | name> [args]
  promptforge-mcp-server check [--offline] [--log-level L] <prompts.toml>
  promptforge-mcp-server test [-run PATTERN] [-update] [-v] [PATH...]
  promptforge-mcp-server version | --help

run executes one prompt once: a file path (ending in .md) or, with --config,
a catalog name. The value goes to stdout; progress and logs go to stderr.
Without --config the gateway comes from PROMPTFORGE_GATEWAY_URL and
PROMPTFORGE_GATEWAY_API_KEY; a prompt that never calls a model needs neither.

check resolves the config and the catalog, then contacts the model server
and shows which served model each prompt's needs bind to; it fails on a
URL that answers 404 (missing /v1), a refused key, an embeddings model it
cannot serve, or a need that binds to nothing. --offline skips the model
server.

test runs prompt tests on a scripted gateway (docs/testing-prompts.md).
"promptforge-mcp-server COMMAND --help" shows a command's own usage.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Once the first signal has started the drain, the handler is dropped:
	// a second Ctrl-C or SIGTERM then ends the process at once, as
	// operators expect when a drain takes longer than they will wait.
	context.AfterFunc(ctx, stop)
	code := realMain(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// env looks a variable up; tests pass their own instead of touching the
// process environment.
type env func(string) (string, bool)

// realMain runs one command line and returns the process exit code.
func realMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookup env) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	if u := commandUsage(args[0]); u != "" && wantsHelp(args[1:]) {
		fmt.Fprint(stdout, u)
		return exitOK
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr, lookup)
	case "version", "--version":
		fmt.Fprintf(stdout, "promptforge-mcp-server %s\n", version)
		return exitOK
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usageText)
		return exitOK
	case "serve":
		return cmdServe(ctx, args[1:], stdin, stdout, stderr, lookup)
	case "check":
		return cmdCheck(ctx, args[1:], stdout, stderr, lookup)
	case "test":
		return cmdTest(ctx, args[1:], stdout, stderr, lookup)
	default:
		fmt.Fprintf(stderr, "error: unknown command %q\n\n%s", args[0], usageText)
		return exitUsage
	}
}
