// Package catalog owns the set of prompts a caller can reach: it resolves
// the [paths].prompts directories (one, or several walked with the same
// patterns), [catalog].include/exclude and the [prompts.NAME] blocks
// into an immutable [Catalog], publishes it with its retrieval index as one
// [Generation], and keeps it current by watching the files and reloading.
//
// Why it is one package: resolution, the retrieval index built over its
// result and the reload that swaps both must agree on one snapshot, so a
// caller never sees a catalog paired with another catalog's index.
//
// Decisions that differ from the reference server (mcp-server §12) are
// deliberate:
//
//   - A broken entry never shadows a healthy prompt. A broken placeholder (a
//     file stem or block key) whose normalised spelling equals a healthy
//     prompt's name gets " (broken)" appended, so listings never show one
//     name twice and run_prompt reaches the healthy prompt; [Catalog.Lookup]
//     also prefers the single healthy match over broken ones. When only
//     broken entries answer to a name, the first (in catalog order) is
//     returned so the caller sees its problem instead of an internal
//     "ambiguous" error.
//   - Several prompts directories (the reference takes one): each root is
//     walked and watched; a name two files declare, in one root or across
//     roots, is a Duplicate fault naming both paths, never shadowed; a
//     [prompts.NAME].file must exist under exactly one root.
//   - Glob metacharacters in [paths].prompts are not interpreted: each root
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
//   - A reload does not rebuild the retrieval index (mcp-server §7.5 step 5). A
//     reload that changes a name, description or health publishes its
//     generation with the index pending, and the generation's first
//     Shortlist builds it; the reload line then says "retrieval pending"
//     where the reference says "current". See below.
//
// # The retrieval index across reloads
//
// Indexing every prompt costs more than resolving a catalog whose files
// are unchanged, so a one-file save that touched a description would
// otherwise make the whole reload wait for the index, and most reloads
// are followed by no need_prompt at all before the next one. So:
//
//   - Unchanged hash (a body-only edit): the generation shares the
//     previous retrieval object, whatever its state.
//   - Changed hash, previous index idle (off, or failed at boot): it stays
//     idle. The boot index is built eagerly, so a ranker that cannot index
//     says so in the boot log.
//   - Changed hash otherwise: a new pending retrieval, holding the healthy
//     entries to index and, as its fallback, the newest index already
//     built (the previous generation's, or that one's fallback if it was
//     itself never built, so fallbacks never chain).
//
// The first [Generation.Shortlist] on a pending generation builds the index
// under the caller's context, inside its ranking slot; concurrent callers
// wait for that build (each may give up on its own context) and then share
// it. A build that fails because its caller's context ended leaves the index
// pending, and the next caller builds afresh, so one abandoned request never
// poisons the generation. Any other failure settles the generation on its
// fallback, marked stale, and warns "need_prompt keeps its previous index:
// <err>" as a failed rebuild always has; it is not retried until a later
// reload changes the hash. A settled retrieval drops its build inputs and
// fallback. Whatever the index, Shortlist only returns entries that resolve
// healthy in the caller's generation.
//
// [RetrievalState] and the reload log report pending honestly: "retrieval
// pending" means no index has been built for this catalog yet, "stale"
// that a stale index was carried forward, "current" otherwise (including
// idle, as before). Because a lazy build fails after its reload has
// logged, the watcher's "now stale" warning only follows a reload that
// carries a stale index forward; the failure itself is the build's warn.
//
// A full reload reuses the previous generation's parsed prompts: a file
// whose size and modification time match what was read before, and whose
// modification time is older than that read by more than the filesystem
// timestamp granularity we allow for (two seconds), is not reopened. Any
// other file is read again and its parse is reused only when its bytes are
// identical. Every file is still stat'ed on a full reload, since its size
// and modification time are the proof that it is unchanged; on a large
// catalog those stats are about half of it, and a stat relative to an open
// directory (fstatat) was measured to save only about a tenth of that, too
// little for a platform-specific walk. Hence patching, below.
//
// # Patching a reload
//
// Stat'ing every file is still a full reload's floor, so the watcher's
// reloads do not resolve in full: the watcher remembers the paths its
// events name, and a reload patches the previous catalog with them
// (patch.go). Each named path is evaluated again as the walk would (a
// file is read and classified, a new directory walked, a vanished one
// dropped); every other directory, file state and entry is shared with
// the previous generation's walk tree and catalog, never copied. The
// changed entries are then spliced in: duplicates, " (broken)" marks,
// catalog order, [catalog].tools and the hash are worked out for them
// alone, and lookups binary-search the sorted entries, so no index is
// rebuilt. The result is the catalog a full resolution would give
// (TestPatchedReloadMatchesFullResolve compares the two over a series of
// edits). Whenever that could fail to hold, the reload resolves in full:
// the first reload after the watch (re-)registered (a save before it had
// no event), after a watch error or more than maxChanged paths, after a
// full reload that published nothing, with changed settings or a moved
// root, and for a tree with symbolic links (what a link reaches changes
// with no event where the link is), [prompts.NAME] blocks or overlapping
// roots, an unreadable directory, or a change that makes a duplicate or
// an empty catalog (the full resolution then reports it). A directory
// renamed within a root also re-registers the watch: fsnotify drops its
// watch when the move reaches it, possibly after the create that watched
// it under the new name.
//
// [WatchFile] watches one prompt file for run --watch with the same
// platform watch and debounce loop as the catalog's [Watcher], and two
// goroutines of its own (a pump and the loop) that [FileWatcher.Close]
// stops and waits for.
package catalog
