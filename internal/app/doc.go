// Package app assembles the process (design §4.1), in a home that tests
// can reach. The command (cmd/promptforge-mcp-server) parses flags, builds
// the logger, handles signals and maps outcomes to exit codes; everything
// between a parsed command line and the packages that do the work is here:
//
//   - [Boot], for serve: load prompts.toml, resolve the catalog, build the
//     environment, create the MCP server, start the watcher and serve one
//     transport, then shut all of it down in order.
//   - [Check], for check: the same loading, resolution and environment
//     plan, stopping before anything touches the network.
//   - [RunOnce], for run: one prompt, once, from a file or a catalog name;
//     [Watch], for run --watch: again after every save. Both add the dev
//     loop when asked (dev.go: the store dump and raw capture of package
//     devrun, the terminal's [StatusLine]).
//   - [Test], for test: prompt tests (package prompttest), found under
//     paths or beside a prompts.toml's catalog.
//   - The failure report ([StepError], [WriteReport]) the three share.
//   - The translation of prompts.toml into each component's own settings
//     (catalog.Settings, server.Limits, the reload function): components
//     never import config.
//   - The one environment builder (envPlan): the gateway client, the
//     holder of its model list (package modelset), the live tools and
//     the file roots, planned from
//     prompts.toml or, for run without one, from PROMPTFORGE_GATEWAY_*.
//   - The process's memory limit (memory.go): [Boot] and [RunOnce] set the
//     Go runtime's soft limit from [limits].process_memory, keep GOMEMLIMIT
//     when the file sets none, or pick a default from the run ceiling and
//     the container's limit; and every run's memory ceiling is handed to
//     the engine from [limits].max_run_memory.
//
// Why a package of its own: the server is the MCP face of PromptForge and
// nothing else; the run command executes prompts without it. Assembly
// needs every package and is needed by none, so it sits on top, and the
// command on top of it imports nothing else of ours.
//
// Goroutines: [Boot] owns two. One stops the prompt watcher once serving
// ends (before the transport drains, so no reload publishes during the
// drain); the other re-fetches the gateway's model list on each reload and
// every [gateway].refresh (modelset.Set.Run), and is stopped, by
// cancelling its context, first when serving ends. Boot waits for both
// before returning; the watcher, the transport
// and the runs are stopped by Boot, in that order, before it returns.
// [RunOnce] and [Watch] start one per run only with a status line: its
// once-a-second redraw, stopped (and waited for) when the run ends. The
// engine's goroutines are gone when engine.Run returns, a capture's
// writer when its Close returns (at the run's end), and Watch closes its
// file watcher before returning.
package app
