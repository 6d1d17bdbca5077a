package replicas_test

import (
	"slices"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// The cost of the PostgreSQL store against memory, through the built
// binary over streamable HTTP on loopback, each store in its own replica
// started by the same run (docs/benchmarks.md, "Run store"). Each call is
// timed from the client; p50 and p99 are reported per call, and calls/s
// for one client calling in sequence.

func benchStores(b *testing.B, body func(b *testing.B, c *client)) {
	for _, kind := range []struct {
		name   string
		shared bool
	}{{"memory", false}, {"postgres", true}} {
		b.Run(kind.name, func(b *testing.B) {
			cl := newCluster(b, gatewaytest.New(b), kind.shared)
			body(b, connect(b, cl.start(kind.name), false))
		})
	}
}

func report(b *testing.B, took []time.Duration, total time.Duration) {
	slices.Sort(took)
	pct := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(len(took))/total.Seconds(), "calls/s")
}

// BenchmarkRunPromptStore: run_prompt of a Lua-only prompt (no gateway),
// so the store's two writes per run are the difference.
func BenchmarkRunPromptStore(b *testing.B) {
	benchStores(b, func(b *testing.B, c *client) {
		args := map[string]any{"prompt": "echo", "args": "x"}
		var took []time.Duration
		start := time.Now()
		for b.Loop() {
			t0 := time.Now()
			if rec, err := c.tool("run_prompt", args); err != nil || rec.Status != "completed" {
				b.Fatalf("run_prompt = %+v, %v", rec, err)
			}
			took = append(took, time.Since(t0))
		}
		report(b, took, time.Since(start))
	})
}

// BenchmarkCheckRunStore: check_run of a finished run, read from the store
// (the PostgreSQL replica does not hold it in memory once it has ended).
func BenchmarkCheckRunStore(b *testing.B) {
	benchStores(b, func(b *testing.B, c *client) {
		rec, err := c.tool("run_prompt", map[string]any{"prompt": "echo", "args": "x"})
		if err != nil {
			b.Fatal(err)
		}
		var took []time.Duration
		start := time.Now()
		for b.Loop() {
			t0 := time.Now()
			if got := c.check(rec.RunID); got.Status != "completed" {
				b.Fatalf("check_run = %+v", got)
			}
			took = append(took, time.Since(t0))
		}
		report(b, took, time.Since(start))
	})
}
