//go:build !linux

package runtrace

import "time"

// threadCPU is not measured here; the benchmark reports wall time only.
func threadCPU() time.Duration { return 0 }
