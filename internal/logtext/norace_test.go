//go:build !race

package logtext

const raceEnabled = false
