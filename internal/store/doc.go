// Package store owns the run-scoped virtual filesystem that a prompt reads
// and writes through store.*: path and glob validation, line-range reads,
// and the write tracking fanout needs to detect arms racing on one path.
// It holds text only and never touches the real filesystem.
//
// Every failure is an [*Error] whose message is the exact text the prompt
// language specifies, so the Lua layer raises err.Error() unchanged and
// hosts branch on [Error.Kind]. Paths are validated by rules that keep them
// safe as relative paths on any platform, so a store can be written to
// disk later without escaping its root. Glob matching runs in time linear
// in the path for a fixed pattern (no backtracking), because patterns come
// from prompts and must not be able to stall a run.
package store
