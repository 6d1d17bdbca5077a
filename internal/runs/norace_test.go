//go:build !race

package runs

const raceEnabled = false
