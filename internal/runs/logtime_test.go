package runs

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// slowStore is the in-memory store behind another type, as a shared store
// would be, whose Finish takes a round trip of rtt.
type slowStore struct {
	Store
	rtt time.Duration
}

func (s *slowStore) Finish(ctx context.Context, rec Stored) (Stored, error) {
	time.Sleep(s.rtt)
	return s.Store.Finish(ctx, rec)
}

// The terminal line is dated when it is written, as slog dates a line,
// not back at the run's end: with a shared store whose write takes a
// while, a line dated at the run's end would sort before the lines
// written while the store was taking the record (and before the store
// error a failed write logs), and before its own writing.
func TestTerminalLineIsDatedWhenWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = 3 * time.Second
		var out bytes.Buffer
		st := &slowStore{Store: NewMemoryStore(RetentionOptions{RetainCompleted: time.Hour}), rtt: rtt}
		r, err := New(Options{MaxConcurrentRuns: 1, AdmissionTimeout: time.Minute, ReplyDeadline: time.Hour,
			RetainCompleted: time.Hour, Store: st, Logger: slog.New(slog.NewTextHandler(&out, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(context.Background())
		start := time.Now()
		h := launch(t, r, id32, "p", func(context.Context) Outcome { return Outcome{Value: "v"} })
		if res := r.Settle(t.Context(), h); res.Status != StatusCompleted {
			t.Fatalf("run: %+v", res)
		}
		var line string
		for l := range strings.Lines(out.String()) {
			if strings.Contains(l, msgTerminal) {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("no terminal line in %q", out.String())
		}
		want := "time=" + start.Add(rtt).Format("2006-01-02T15:04:05.000Z07:00") + " "
		if !strings.HasPrefix(line, want) {
			t.Errorf("terminal line %q; want it dated when written, %q", line, want)
		}
	})
}

// A body's own reading of its end (Outcome.Ended: the server's is its
// trace clock, an older wall reading advanced by the monotonic clock,
// which a suspend or a clock step leaves behind the wall clock) dates the
// record, not the log line: the line has the wall clock's time when it
// is written, as every other line has.
func TestTerminalLineIsNotDatedByTheBodysClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		r, err := New(Options{MaxConcurrentRuns: 1, AdmissionTimeout: time.Minute, ReplyDeadline: 3 * time.Hour,
			RetainCompleted: time.Hour, Logger: slog.New(slog.NewTextHandler(&out, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(context.Background())
		start := time.Now()
		h := launch(t, r, id32, "p", func(context.Context) Outcome {
			time.Sleep(2 * time.Hour)
			// Its clock says an hour has passed.
			return Outcome{Value: "v", Ended: start.Add(time.Hour)}
		})
		if res := r.Settle(t.Context(), h); res.Status != StatusCompleted || res.ElapsedMS != uint64(time.Hour.Milliseconds()) {
			t.Fatalf("run: %+v; want completed in the body's hour", res)
		}
		want := "time=" + start.Add(2*time.Hour).Format("2006-01-02T15:04:05.000Z07:00") + " "
		for l := range strings.Lines(out.String()) {
			if strings.Contains(l, msgTerminal) && !strings.HasPrefix(l, want) {
				t.Errorf("terminal line %q; want it dated by the wall clock, %q", l, want)
			}
		}
		if !strings.Contains(out.String(), msgTerminal) {
			t.Fatalf("no terminal line in %q", out.String())
		}
	})
}
