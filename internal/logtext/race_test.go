//go:build race

package logtext

// raceEnabled: the race detector makes sync.Pool drop a share of what is
// put in it on purpose, so a test of reuse cannot count allocations.
const raceEnabled = true
