package main

import "slices"

// Each command's own usage, printed by "COMMAND --help" (exit 0), as the
// reference's dev runner and most CLIs answer --help after a command.
const runUsage = `usage: promptforge-mcp-server run [flags] <prompt.md | name> [args]

Runs one prompt: a file path (ending in .md) or, with --config, a catalog
name. The value goes to stdout; progress and logs go to stderr. Without
--config the gateway comes from PROMPTFORGE_GATEWAY_URL and
PROMPTFORGE_GATEWAY_API_KEY; a prompt that never calls a model needs
neither. Put an args string that starts with "-" after "--".

  --config F      prompts.toml: gateway, models and tools as serve has them
  --input F       seed the prompt's declared input from file F
  --output F      write the prompt's declared output to file F
  --log-level L   debug, info, warn or error (default info)
  --watch         run, then run again on every save of the prompt file
                  (Ctrl-C stops)
  --dump          after every run, failed or not, write the run's store
                  to <prompt stem>.store/ beside the prompt (stale files
                  removed, owner-only, never through a symbolic link)
  --store-dir D   write the store to D instead (implies --dump)
  --capture-raw   also write each model turn's request and response JSON
                  to <store dir>/.trace/ (prompts and replies in clear;
                  implies --dump)

--watch implies --dump. On a terminal a status line shows the section,
the model turns, the elapsed time and the tokens; on a pipe the progress
is the log's lines.

Exit 0 on success, 1 on failure, 2 on a bad command line, 130 when
Ctrl-C stopped the run.
`

const serveUsage = `usage: promptforge-mcp-server serve [--stdio] [--log-level L] <prompts.toml>

Serves the catalog prompts.toml describes to MCP clients: over streamable
HTTP at [server].bind, or over stdin/stdout with --stdio. Logs go to
stderr. Prompt files and prompts.toml are watched and reloaded on change.
SIGINT or SIGTERM drains the runs in flight and stops; a second one stops
at once.

  --stdio        serve one client over stdin/stdout instead of HTTP
  --log-level L  debug, info, warn or error (default info)
`

const checkUsage = `usage: promptforge-mcp-server check [--offline] [--log-level L] <prompts.toml>

Resolves the config and the catalog as serve would, printing every fault
at once, then contacts the model server and shows which served model each
prompt's needs bind to. It fails on a URL that answers 404 (missing /v1),
a refused key, an embeddings model ([retrieval]) the server cannot serve,
or a need that binds to nothing, and notes the prompts that have no
tests.

  --offline      do not contact the model server
  --log-level L  debug, info, warn or error (default warn)
`

// wantsHelp reports whether a command's arguments ask for its usage:
// --help, -help or -h before any "--".
func wantsHelp(args []string) bool {
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.ContainsFunc(args, func(a string) bool { return a == "--help" || a == "-help" || a == "-h" })
}

// commandUsage is the usage of a command that has its own, "" otherwise.
func commandUsage(cmd string) string {
	switch cmd {
	case "run":
		return runUsage
	case "serve":
		return serveUsage
	case "check":
		return checkUsage
	case "test":
		return testUsage
	}
	return ""
}
