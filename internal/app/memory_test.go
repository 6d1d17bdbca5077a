package app

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// config may import neither luavm nor the gateway, so it repeats their
// defaults; this keeps them equal.
func TestLimitDefaultsAgree(t *testing.T) {
	if config.DefaultMaxRunMemory != luavm.DefaultMaxRunMemory {
		t.Errorf("config.DefaultMaxRunMemory %d != luavm.DefaultMaxRunMemory %d", config.DefaultMaxRunMemory, luavm.DefaultMaxRunMemory)
	}
	if config.DefaultMaxRequestSize != gateway.DefaultMaxRequestBytes {
		t.Errorf("config.DefaultMaxRequestSize %d != gateway.DefaultMaxRequestBytes %d", config.DefaultMaxRequestSize, gateway.DefaultMaxRequestBytes)
	}
}

func TestProcessMemoryLimit(t *testing.T) {
	none := func() (int64, bool) { return 0, false }
	small := func() (int64, bool) { return 400 << 20, true }
	big := func() (int64, bool) { return 8 << 30, true }
	for _, tc := range []struct {
		name         string
		setting, cur int64
		runs         int
		runMemory    int64
		cgroup       func() (int64, bool)
		want         int64
		source       string
	}{
		{"setting", 2 << 30, math.MaxInt64, 4, 64 << 20, small, 2 << 30, "[limits].process_memory"},
		{"setting beats GOMEMLIMIT", 2 << 30, 1 << 30, 4, 64 << 20, none, 2 << 30, "[limits].process_memory"},
		{"0 means none", config.NoProcessMemoryLimit, 1 << 30, 4, 64 << 20, small, math.MaxInt64, `[limits].process_memory = "0"`},
		{"GOMEMLIMIT is kept", 0, 3 << 30, 4, 64 << 20, small, 0, "GOMEMLIMIT"},
		{"default", 0, math.MaxInt64, 4, 64 << 20, none, 256<<20 + 8*64<<20, "default: 256MiB + 2 x max_concurrent_runs x max_run_memory"},
		{"default under a big container", 0, math.MaxInt64, 4, 64 << 20, big, 256<<20 + 8*64<<20, "default: 256MiB"},
		{"default in a small container", 0, math.MaxInt64, 4, 64 << 20, small, 360 << 20, "90% of the container's memory limit"},
		{"run command", 0, math.MaxInt64, 1, 0, none, 256<<20 + 2*64<<20, "default"},
	} {
		got, source := processMemoryLimit(tc.setting, tc.cur, tc.runs, tc.runMemory, tc.cgroup)
		if got != tc.want || !strings.Contains(source, tc.source) {
			t.Errorf("%s: %d (%s), want %d (%s)", tc.name, got, source, tc.want, tc.source)
		}
	}
}

// hoard keeps about 8 MiB of strings in a table.
var hoard = luaPrompt("hoard", "Keep eight megabytes of text.", `local t = {} for i = 1, 80 do t[i] = string.rep("x", 1e5) .. i end return #t`)

// [limits] reaches every run, served and run once: a prompt within the
// default ceiling fails with the configured one, which the error names.
func TestRunMemoryLimitReachesEveryRun(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	path := servertest.ConfigDir(t, "", nil, map[string]string{"hoard.md": hoard})
	if got, err := RunOnce(context.Background(), RunOptions{Target: "hoard", ConfigPath: path}); err != nil || got != "80" {
		t.Fatalf("within the default ceiling: %q, %v", got, err)
	}
	os.WriteFile(path, append(mustRead(t, path), []byte("\n[limits]\nmax_run_memory = \"4MiB\"\nprocess_memory = \"3GiB\"\n")...), 0o644)
	_, err := RunOnce(context.Background(), RunOptions{Target: "hoard", ConfigPath: path})
	if err == nil || !strings.Contains(err.Error(), "over its 4MiB ceiling") || !strings.Contains(err.Error(), "[limits].max_run_memory") {
		t.Fatalf("run: %v", err)
	}
	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Fatalf("process memory limit %d, want 3GiB", got)
	}

	log := newSignalLog()
	cs, done := bootStdio(t, path, log)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "hoard"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := servertest.TextOf(t, res); !res.IsError || !strings.Contains(text, "over its 4MiB ceiling") {
		t.Fatalf("run_prompt: %s", text)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.text(), "process memory limit") {
		t.Fatalf("the limit was not logged:\n%s", log.text())
	}
}
