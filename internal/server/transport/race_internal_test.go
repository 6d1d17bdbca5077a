//go:build race

package transport

// raceEnabled: the race detector makes sync.Pool drop a share of what is
// put in it on purpose, and the SDK's JSON decoder pools its buffers, so
// under it a test cannot compare two paths' allocation counts.
const raceEnabled = true
