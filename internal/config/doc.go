// Package config owns prompts.toml: reading it, expanding ${VAR} from the
// process environment and the name-matched env file, refusing unknown keys,
// and validating every setting into a typed [Config], so that the rest of the
// server works only with values that are known to be well-formed and no
// setting is ever silently ignored or misread.
//
// The load pipeline and its messages follow the reference (mcp-server §2)
// so an existing prompts.toml loads unchanged; the [models."<id>"] tables,
// [paths].files, [gateway].timeout, request_timeout and thinking_switch are
// ours (design §3.2–3.4, gateway-picker-webfetch §1.14).
// testdata/full.toml is an annotated reference of every key with its
// default.
//
// The textual formats config shares with other packages live in leaves
// below it (humantime for durations, secret for credentials), and it
// imports no other internal package, so every other package may import
// config without a cycle and config never learns what consumes it.
//
// Relative paths in the file are read against the file's own directory
// ([Config.Dir]), never the working directory, because an IDE starts a
// stdio server wherever its project is; [Config.PromptDirs] and
// [Config.FileRoots] apply that rule, lexically, so every command and
// every reload reads paths the same way. Nothing here looks at the
// filesystem beyond reading the file and its env file, touches the
// network, or modifies the process environment; an env file's values
// live only in the Config they built.
package config
