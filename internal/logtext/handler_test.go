package logtext

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"
)

// pair is a Handler and a slog.TextHandler fed the same calls.
type pair struct {
	fast, text slog.Handler
	fb, tb     *bytes.Buffer
}

func newPair(opts *slog.HandlerOptions) *pair {
	p := &pair{fb: &bytes.Buffer{}, tb: &bytes.Buffer{}}
	p.fast, p.text = New(p.fb, opts), slog.NewTextHandler(p.tb, opts)
	return p
}

func (p *pair) with(attrs ...slog.Attr) *pair {
	return &pair{fast: p.fast.WithAttrs(attrs), text: p.text.WithAttrs(attrs), fb: p.fb, tb: p.tb}
}

func (p *pair) group(name string) *pair {
	return &pair{fast: p.fast.WithGroup(name), text: p.text.WithGroup(name), fb: p.fb, tb: p.tb}
}

func (p *pair) handle(t testing.TB, r slog.Record) {
	t.Helper()
	if f, x := p.fast.Enabled(context.Background(), r.Level), p.text.Enabled(context.Background(), r.Level); f != x {
		t.Fatalf("Enabled(%v): %v, TextHandler %v", r.Level, f, x)
	}
	if err := p.fast.Handle(context.Background(), r.Clone()); err != nil {
		t.Fatal(err)
	}
	if err := p.text.Handle(context.Background(), r.Clone()); err != nil {
		t.Fatal(err)
	}
	if got, want := p.fb.String(), p.tb.String(); got != want {
		t.Fatalf("the handler wrote\n%q\nslog.TextHandler wrote\n%q", got, want)
	}
	// The same record through LogAttrs's path, which a Handler writes
	// without the record (handleAttrs), must write the same line again.
	if !p.fast.Enabled(context.Background(), r.Level) {
		return
	}
	var attrs []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	fast, text := p.fb.Len(), p.tb.Len()
	logAttrsAt(p.fast, r.Time, r.Level, r.Message, attrs)
	if err := p.text.Handle(context.Background(), r.Clone()); err != nil {
		t.Fatal(err)
	}
	if got, want := p.fb.String()[fast:], p.tb.String()[text:]; got != want {
		t.Fatalf("through LogAttrs the handler wrote\n%q\nslog.TextHandler wrote\n%q", got, want)
	}
}

type valuer struct{ s string }

func (v valuer) LogValue() slog.Value { return slog.StringValue(v.s) }

func TestHandlerMatchesTextOnTheServersLines(t *testing.T) {
	p := newPair(nil)
	now := time.Now()
	r := slog.NewRecord(now, slog.LevelInfo, "Run started", 0)
	p.handle(t, r)
	r = slog.NewRecord(now.Add(3*time.Millisecond), slog.LevelInfo, "run reached its terminal state", 0)
	r.AddAttrs(slog.String("run_id", "r-01JF7"), slog.String("prompt", "echo"), slog.String("status", "completed"),
		slog.Uint64("turns", 0), slog.Uint64("prompt_tokens", 12), slog.Uint64("completion_tokens", 3), slog.Uint64("elapsed_ms", 1))
	p.handle(t, r)
	// A second later, and in another zone: the kept stamp must not serve.
	p.handle(t, slog.NewRecord(now.Add(time.Second), slog.LevelWarn, "x", 0))
	p.handle(t, slog.NewRecord(now.Add(time.Second).In(time.FixedZone("X", -(3*3600+1800))), slog.LevelWarn, "x", 0))
	p.handle(t, slog.NewRecord(now.Add(time.Second).UTC(), slog.LevelError+2, "x", 0))
	p.handle(t, slog.NewRecord(time.Time{}, slog.LevelInfo, "no time", 0))
	// What the fast path must quote, and how.
	r = slog.NewRecord(now, slog.LevelInfo, "", 0)
	r.AddAttrs(slog.String("q", "a\"b\\c\x7f\té\u00a0"), slog.String("e", ""), slog.String("del", "a\x7fb"), slog.String("bs", `a\b`),
		slog.String("u", "é\u2028"), slog.String("nbsp", "a\u00a0"), slog.String("bad", "\xff"), slog.String("k y", "v=w"), slog.String("bs2", `a \b`), slog.String("ok", "é"))
	p.handle(t, r)
	// What the fast path leaves to TextHandler.
	r = slog.NewRecord(now, slog.LevelInfo, "", 0)
	r.AddAttrs(slog.Any("error", errors.New("boom")), slog.Group("g", slog.Int("a", 1)), slog.Any("v", valuer{"x y"}),
		slog.Attr{}, slog.String("", "empty key"), slog.Any("b", []byte("hi")), slog.Time("at", now), slog.Duration("d", 1500*time.Millisecond),
		slog.Float64("f", math.Inf(-1)), slog.Bool("ok", true), slog.Int("n", -7), slog.String("q", "a\"b\\c\x7f\té\u00a0"), slog.String("e", ""),
		slog.String("del", "a\x7fb"), slog.String("bs", `a\b`), slog.String("u", "é\u2028"), slog.String("bad", "\xff"))
	p.handle(t, r)
	q := p.with(slog.String("component", "mcp"), slog.Int("pid", 1))
	q.handle(t, slog.NewRecord(now, slog.LevelInfo, "with attrs", 0))
	q.with(slog.Any("err", io.EOF)).handle(t, slog.NewRecord(now, slog.LevelInfo, "slow attrs", 0))
	q.group("grp").with(slog.Int("x", 1)).handle(t, slog.NewRecord(now, slog.LevelInfo, "grouped", 0))
	q.group("").handle(t, slog.NewRecord(now, slog.LevelInfo, "empty group", 0))
	// Levels below the minimum are not enabled, as with TextHandler.
	d := newPair(&slog.HandlerOptions{Level: slog.LevelWarn})
	if d.fast.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("info enabled at a warn minimum")
	}
}

// FuzzHandlerMatchesText sends the same random records, attributes and
// groups through Handler and slog.TextHandler and requires the same bytes.
func FuzzHandlerMatchesText(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, "Run started", "run_id", int64(1733100000123456789), 1.5)
	f.Add([]byte{20, 9, 9, 1, 30, 2, 40, 3}, "k=v", "\"quoted\" \\ é\x00", int64(-62135596800000000), math.NaN())
	f.Add([]byte{50, 60, 70, 80, 90, 100, 110, 255}, "", "\u2028", int64(253402300799999999), -0.0)
	f.Fuzz(func(t *testing.T, ops []byte, s1, s2 string, n int64, fl float64) {
		zones := []*time.Location{time.UTC, time.Local, time.FixedZone("A", 5*3600+45*60), time.FixedZone("B", -1), time.FixedZone("C", 0)}
		p := newPair(&slog.HandlerOptions{Level: slog.Level(int(n%9) - 4)})
		base := time.Unix(0, n)
		strs := []string{s1, s2, s1 + s2, "msg", "Run started"}
		var attrs []slog.Attr
		attr := func(op byte) slog.Attr {
			key, val := strs[int(op)%len(strs)], strs[int(op/8)%len(strs)]
			switch op % 12 {
			case 0:
				return slog.String(key, val)
			case 1:
				return slog.Int64(key, n)
			case 2:
				return slog.Uint64(key, uint64(n))
			case 3:
				return slog.Float64(key, fl)
			case 4:
				return slog.Bool(key, n%2 == 0)
			case 5:
				return slog.Duration(key, time.Duration(n))
			case 6:
				return slog.Time(key, base.In(zones[int(op)%len(zones)]))
			case 7:
				return slog.Any(key, errors.New(val))
			case 8:
				return slog.Group(key, slog.String(val, key))
			case 9:
				return slog.Any(key, valuer{val})
			case 10:
				return slog.Attr{}
			}
			return slog.String("", val)
		}
		for i, op := range ops {
			switch op >> 5 {
			case 0, 1, 2:
				attrs = append(attrs, attr(op))
			case 3:
				p = p.with(attrs...)
				attrs = nil
			case 4:
				if op&1 == 0 {
					p = p.group(strs[int(op)%len(strs)])
				}
			default:
				// A record: its time moves within the second or across
				// seconds and zones, so the kept stamp is tried both ways.
				at := base.Add(time.Duration(i) * time.Duration(op) * 97 * time.Microsecond).In(zones[int(op)%len(zones)])
				if op&7 == 7 {
					at = time.Time{}
				}
				r := slog.NewRecord(at, slog.Level(int(op%16)-8), strs[int(op)%len(strs)], 0)
				r.AddAttrs(attrs...)
				p.handle(t, r)
				attrs = nil
			}
		}
		r := slog.NewRecord(base, slog.LevelError, s1, 0)
		r.AddAttrs(attrs...)
		p.handle(t, r)
	})
}

// BenchmarkTerminalLine is the run's terminal line (mcp-server §1.3)
// through Handler and through slog.TextHandler, to io.Discard.
//
//	go test ./internal/logtext -run '^$' -bench TerminalLine -benchmem
func BenchmarkTerminalLine(b *testing.B) {
	for _, h := range []struct {
		name string
		h    slog.Handler
	}{{"logtext", New(io.Discard, nil)}, {"slog", slog.NewTextHandler(io.Discard, nil)}} {
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "run reached its terminal state", 0)
				r.AddAttrs(slog.String("run_id", "r-01JF7"), slog.String("prompt", "echo"), slog.String("status", "completed"),
					slog.Uint64("turns", 0), slog.Uint64("prompt_tokens", 12), slog.Uint64("completion_tokens", 3), slog.Uint64("elapsed_ms", 1))
				h.h.Handle(context.Background(), r)
			}
		})
	}
}

// TestLogAttrsWritesWhatTheLoggerWrites: LogAttrs writes the line
// slog.Logger.LogAttrs writes through a TextHandler (the source aside, which
// no server logger asks for), and nothing below the handler's level.
func TestLogAttrsWritesWhatTheLoggerWrites(t *testing.T) {
	var got, want bytes.Buffer
	at := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	opts := &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: at}
	attrs := []slog.Attr{slog.String("run_id", "r-1"), slog.String("prompt", "say hi"), slog.Uint64("turns", 2),
		slog.Uint64("prompt_tokens", 10), slog.Uint64("completion_tokens", 3), slog.Uint64("elapsed_ms", 7), slog.Bool("b", true)}
	h := New(&got, opts)
	LogAttrs(h, slog.LevelInfo, "run reached its terminal state", attrs...)
	LogAttrs(h, slog.LevelDebug, "not written", attrs...)
	l := slog.New(slog.NewTextHandler(&want, opts))
	l.LogAttrs(context.Background(), slog.LevelInfo, "run reached its terminal state", attrs...)
	if got.String() != want.String() {
		t.Fatalf("LogAttrs wrote\n%q\nslog.Logger wrote\n%q", got.String(), want.String())
	}
}

// The run's terminal line (mcp-server §1.3) through LogAttrs allocates
// nothing: a Handler writes its seven attributes without a slog.Record,
// which holds five inline and allocates for more (issue #12).
func TestLogAttrsOfTheTerminalLineAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers on purpose")
	}
	h := New(io.Discard, nil)
	allocs := testing.AllocsPerRun(100, func() {
		LogAttrs(h, slog.LevelInfo, "run reached its terminal state",
			slog.String("run_id", "r-01JF7"), slog.String("prompt", "echo"), slog.String("status", "completed"),
			slog.Uint64("turns", 0), slog.Uint64("prompt_tokens", 12), slog.Uint64("completion_tokens", 3), slog.Uint64("elapsed_ms", 1))
	})
	if allocs != 0 {
		t.Errorf("LogAttrs allocated %v times per line; want 0", allocs)
	}
}

// LogAttrsAt writes the line of a record made at the time it is given,
// and nothing below the handler's level.
func TestLogAttrsAtWritesTheRecordOfItsTime(t *testing.T) {
	var got, want bytes.Buffer
	at := time.Date(2026, 12, 2, 3, 4, 5, 678_000_000, time.UTC)
	attrs := []slog.Attr{slog.String("run_id", "r-1"), slog.Uint64("elapsed_ms", 7)}
	LogAttrsAt(New(&got, nil), at, slog.LevelInfo, "run reached its terminal state", attrs...)
	LogAttrsAt(New(&got, nil), at, slog.LevelDebug, "not written", attrs...)
	r := slog.NewRecord(at, slog.LevelInfo, "run reached its terminal state", 0)
	r.AddAttrs(attrs...)
	if err := slog.NewTextHandler(&want, nil).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("LogAttrsAt wrote\n%q\nslog.TextHandler wrote\n%q", got.String(), want.String())
	}
}

// LogAttrs and LogAttrsAt through a Handler (no ReplaceAttr, so its fast
// path) write TextHandler's line, also when an attribute is one the fast
// path does not format (a group, an error, an empty key): handleAttrs then
// writes nothing and the line goes through a slog.Record, whole and once.
func TestLogAttrsAtFallsBackForAttrsItDoesNotFormat(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 4, 5, 678_000_000, time.UTC)
	for _, attrs := range [][]slog.Attr{
		{slog.String("run_id", "r-1"), slog.Uint64("elapsed_ms", 7), slog.Bool("b", true)},
		{slog.String("run_id", "r-1"), slog.Group("g", slog.Int("n", 1))},
		{slog.String("run_id", "r-1"), slog.Any("err", errors.New("boom"))},
		{slog.String("run_id", "r-1"), slog.String("", "dropped"), slog.Int("n", 2)},
	} {
		var got, want bytes.Buffer
		LogAttrsAt(New(&got, nil), at, slog.LevelInfo, "run reached its terminal state", attrs...)
		r := slog.NewRecord(at, slog.LevelInfo, "run reached its terminal state", 0)
		r.AddAttrs(attrs...)
		if err := slog.NewTextHandler(&want, nil).Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("LogAttrsAt(%v) wrote\n%q\nslog.TextHandler wrote\n%q", attrs, got.String(), want.String())
		}
	}
}
