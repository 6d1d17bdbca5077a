package app

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/engine"
)

// runLimits are the engine limits every run gets: [limits].max_run_memory
// (the other engine limits keep their defaults).
func (p envPlan) runLimits() engine.Limits {
	var l engine.Limits
	l.MaxRunMemory = p.limits.MaxRunMemory
	return l
}

// Process memory: the Go runtime's soft limit ([limits].process_memory),
// so that the collector works harder as the process nears it instead of
// letting garbage pile up until the kernel kills the process (issue #11).
const (
	// processBaseMemory is what the default limit allows besides the runs:
	// the catalog, the gateway's buffers, the SDK's sessions.
	processBaseMemory = 256 << 20
	// cgroupShare is the part of a container's memory limit the default
	// takes at most, leaving room for what the Go runtime does not count
	// (goroutine stacks' slack, the binary, cgo-free but not free of the
	// kernel's accounting).
	cgroupShare = 0.9
)

// applyProcessMemory sets the runtime's soft memory limit from the
// setting (config.Limits.ProcessMemory) for a process running up to runs
// runs at once, and logs what it chose and why.
func applyProcessMemory(setting int64, runs int, runMemory int64, logger *slog.Logger) {
	current := debug.SetMemoryLimit(-1)
	limit, source := processMemoryLimit(setting, current, runs, runMemory, cgroupMemoryMax)
	if limit == 0 {
		logger.Info("process memory limit", "limit", config.FormatSize(current), "source", source)
		return
	}
	debug.SetMemoryLimit(limit)
	shown := "none"
	if limit != math.MaxInt64 {
		shown = config.FormatSize(limit)
	}
	logger.Info("process memory limit", "limit", shown, "source", source)
}

// processMemoryLimit decides the soft memory limit: the setting when
// prompts.toml has one ("0" meaning none); else 0, leaving it alone, when
// the runtime already has one (GOMEMLIMIT); else room for every run at its
// memory ceiling twice over (the collector's headroom) plus a base, capped
// at 90% of the container's memory limit when there is one. source says
// which, for the log.
func processMemoryLimit(setting, current int64, runs int, runMemory int64, cgroup func() (int64, bool)) (limit int64, source string) {
	switch {
	case setting == config.NoProcessMemoryLimit:
		return math.MaxInt64, `[limits].process_memory = "0"`
	case setting > 0:
		return setting, "[limits].process_memory"
	case current != math.MaxInt64:
		return 0, "GOMEMLIMIT"
	}
	if runMemory <= 0 {
		runMemory = config.DefaultMaxRunMemory
	}
	limit = processBaseMemory + 2*int64(max(runs, 1))*runMemory
	source = "default: 256MiB + 2 x max_concurrent_runs x max_run_memory"
	if c, ok := cgroup(); ok && int64(float64(c)*cgroupShare) < limit {
		limit = int64(float64(c) * cgroupShare)
		source = "default: 90% of the container's memory limit"
	}
	return limit, source
}

// cgroupMemoryMax reads the memory limit of the process's cgroup (v2,
// then v1); false when there is none or it cannot be read.
func cgroupMemoryMax() (int64, bool) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(data))
		n, err := strconv.ParseInt(s, 10, 64)
		// "max" (v2) or a page-rounded MaxInt64 (v1) mean no limit.
		if err != nil || n <= 0 || n >= math.MaxInt64/2 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
