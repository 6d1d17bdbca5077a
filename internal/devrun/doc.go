// Package devrun is what the run command's dev loop writes to disk: the
// run's store reconciled into a directory beside the prompt (Dump), and
// each model turn's raw request and response captured under its .trace/
// (Capture). Both are the reference dev runner's (gateway-picker-webfetch
// §4.2) with its safety rules: owner-only permissions, atomic writes,
// nothing written through a symbolic link or outside the directory.
//
// It is a leaf (floor 0): it takes a store's files as a map and a turn as
// bytes, so the engine and the store know nothing of it; app wires it.
//
// Goroutines: a Capture has one writer, started by StartCapture and
// stopped by Close, which drains the queue and waits for it.
package devrun
