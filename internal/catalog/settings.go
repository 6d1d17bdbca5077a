package catalog

import "context"

// Settings is what resolution needs from prompts.toml. The server fills it
// from its configuration, so this package does not depend on the config
// loader; patterns and block files are expected to have passed the
// loader's shape check (relative, no "..").
type Settings struct {
	// Roots are the prompts directories ([paths].prompts), in the order
	// configured. The server passes them absolute, read against the config
	// file's directory; a relative root here is relative to the process
	// working directory. Each is walked with the same patterns, and the
	// entries' paths are joined under them, so a fault names a file
	// unambiguously across roots.
	Roots []string
	// Include and Exclude are the [catalog] glob patterns, relative to
	// each root, with '/' separators.
	Include []string
	Exclude []string
	// Tools are the [catalog].tools globs over prompt names (path.Match
	// syntax: *, ?, [...]): the healthy prompts they match are also
	// published as MCP tools of their own (see [Catalog.Tools]). Empty:
	// only the built-in tools.
	Tools []string
	// Blocks are the [prompts.NAME] tables, keyed by NAME.
	Blocks map[string]Block
}

// Block is one [prompts.NAME] table.
type Block struct {
	// Enabled is the table's enabled key (true when absent in the file).
	Enabled bool
	// File is the prompt file relative to a root; "" when the table names
	// none and only overrides a prompt some glob found. With several
	// roots it must exist under exactly one of them: under none it is a
	// broken entry, under two a Duplicate fault naming both, so a file in
	// one directory never silently shadows its namesake in another.
	File string
}

// Mode says what resolution does with a prompt that cannot run. The zero
// Mode is as strict as Reject.
type Mode uint8

const (
	// Reject fails the pass on any broken prompt: boot refuses to serve an
	// incomplete catalog.
	Reject Mode = iota + 1
	// Retain lists a broken prompt with its problem: a reload keeps
	// serving while an author fixes a save.
	Retain
)

// LoadFunc re-reads prompts.toml for a reload. It returns the settings to
// resolve with and the names of changed settings that only a restart
// applies (e.g. "[server].bind"), in the order they should be reported.
type LoadFunc func(ctx context.Context) (s Settings, ignored []string, err error)
