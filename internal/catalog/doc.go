// Package catalog owns the set of prompts a caller can reach: it resolves
// [paths].prompts, [catalog].include/exclude and the [prompts.NAME] blocks
// into an immutable Catalog, publishes it with its retrieval index as one
// Generation, and keeps it current by watching the files and reloading.
//
// Why it is one package: resolution, the retrieval index built over its
// result and the reload that swaps both must agree on one snapshot, so a
// caller never sees a catalog paired with another catalog's index.
//
// Decisions that differ from the reference server (see the mcp-server spec
// §12) are deliberate:
//
//   - A broken entry never shadows a healthy prompt. A broken placeholder
//     (a file stem or block key) whose normalised spelling equals a healthy
//     prompt's name gets " (broken)" appended, so listings never show one
//     name twice and run_prompt reaches the healthy prompt; Lookup also
//     prefers the single healthy match over broken ones. When only broken
//     entries answer to a name, the first (in catalog order) is returned so
//     the caller sees its problem instead of an internal "ambiguous" error.
//   - Glob metacharacters in [paths].prompts are not interpreted: the root
//     is walked as a directory and only the patterns are globs relative to
//     it. Braces in patterns are literals, as in the reference's glob
//     dialect (doublestar's {a,b} alternation is disabled by escaping).
//   - A file that is a prompt by its frontmatter but that the runtime would
//     refuse (promptforge: 2, or a [prompts.NAME] file with no promptforge:
//     version at all) is listed broken at resolution instead of healthy and
//     failing every run.
//   - Symlinked directories are followed (as the reference does) but never
//     into one of their own ancestors, so a symlink loop cannot stall a
//     resolution.
//
// Reloads reuse the previous generation's parsed prompts: a file whose size
// and modification time match what was read before, and whose modification
// time is older than that read by more than the filesystem timestamp
// granularity we allow for (two seconds), is not reopened. Any other file is
// read again and its parse is reused only when its bytes are identical.
package catalog
