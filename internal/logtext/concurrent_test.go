package logtext

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentLinesAreWholeAndExact: handlers derived from one root
// (WithAttrs, WithGroup: fast and TextHandler paths), used at once from
// many goroutines with times in several zones and seconds (the kept
// stamp replaced under them), write every line whole and exactly as
// slog.TextHandler writes it alone.
func TestConcurrentLinesAreWholeAndExact(t *testing.T) {
	var out bytes.Buffer
	root := New(&out, nil)
	zones := []*time.Location{time.UTC, time.FixedZone("A", 5*3600+45*60), time.FixedZone("B", -7*3600)}
	base := time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)
	hs := []func(slog.Handler) slog.Handler{
		func(h slog.Handler) slog.Handler { return h },
		func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String("component", "mcp server")})
		},
		func(h slog.Handler) slog.Handler { return h.WithGroup("g").WithAttrs([]slog.Attr{slog.Int("n", 1)}) },
	}
	var want []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			mk := hs[g%len(hs)]
			fast := mk(root)
			for i := range 200 {
				at := base.Add(time.Duration(g*7+i) * 333 * time.Millisecond).In(zones[(g+i)%len(zones)])
				r := slog.NewRecord(at, slog.LevelInfo, fmt.Sprintf("line %d of %d", i, g), 0)
				r.AddAttrs(slog.String("run_id", fmt.Sprintf("r-%d-%d", g, i)), slog.Uint64("turns", uint64(i)))
				if i%5 == 0 {
					r.AddAttrs(slog.Any("err", fmt.Errorf("e %d", i)))
				}
				var one bytes.Buffer
				if err := mk(slog.NewTextHandler(&one, nil)).Handle(context.Background(), r.Clone()); err != nil {
					t.Error(err)
				}
				if err := fast.Handle(context.Background(), r); err != nil {
					t.Error(err)
				}
				mu.Lock()
				want = append(want, one.String())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	got := strings.SplitAfter(out.String(), "\n")
	got = got[:len(got)-1] // after the last newline
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%d lines written, %d expected; first lines:\n%q\n%q", len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
	}
}
