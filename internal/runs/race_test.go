//go:build race

package runs

// raceEnabled: the race detector makes sync.Pool drop a share of what is
// put in it on purpose, so a test of reuse cannot count allocations.
const raceEnabled = true
