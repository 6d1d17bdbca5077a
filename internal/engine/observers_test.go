package engine_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/promptforge-go/promptforge/internal/engine"
)

// recordLog keeps every record at every level as "LEVEL message attrs".
type recordLog struct {
	mu    sync.Mutex
	lines []string
	level []slog.Level
}

func (l *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	l.level = append(l.level, r.Level)
	return nil
}
func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *recordLog) WithGroup(string) slog.Handler      { return l }

// atLeast is the lines at level or above, in order.
func (l *recordLog) atLeast(level slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for i, line := range l.lines {
		if l.level[i] >= level {
			out = append(out, line)
		}
	}
	return out
}

// every feeds one event of each detail, all carrying author text.
func every(o engine.Observer) {
	for d := engine.ParseStarted; d <= engine.DetailLua; d++ {
		msg := ""
		if d == engine.DetailLua {
			msg = "Lua: secret"
		}
		o.Observe(engine.Event{Execution: "run", Section: "Secret section", Detail: d, Message: msg})
	}
}

func TestObserversHandEveryEventToEachInOrder(t *testing.T) {
	var got []string
	rec := func(name string) engine.Observer {
		return engine.ObserverFunc(func(ev engine.Event) { got = append(got, name+" "+ev.String()) })
	}
	o := engine.Observers(rec("a"), nil, rec("b"))
	o.Observe(engine.Event{Detail: engine.RunStarted})
	o.Observe(engine.Event{Detail: engine.DetailLua, Message: "Lua: hi"})
	want := []string{"a Run started", "b Run started", "a Lua: hi", "b Lua: hi"}
	if !slices.Equal(got, want) {
		t.Fatalf("observed %q, want %q", got, want)
	}
	engine.Observers().Observe(engine.Event{Detail: engine.RunStarted}) // none: a no-op
}

// One live observer among nils is itself, composed without allocating
// (each server run composes its narration with its progress, which a call
// without a progress token does not have).
func TestObserversOfOneIsThatOne(t *testing.T) {
	var n int
	one := engine.ObserverFunc(func(engine.Event) { n++ })
	var o engine.Observer
	if allocs := testing.AllocsPerRun(100, func() { o = engine.Observers(one, nil) }); allocs != 0 {
		t.Fatalf("%v allocations to compose one observer, want 0", allocs)
	}
	o.Observe(engine.Event{Detail: engine.RunStarted})
	if n != 1 {
		t.Fatalf("the one observer saw %d events, want 1", n)
	}
}

// The server's narration: at info and above only the run start and the
// failures reach the log, and no line at any level carries anything an
// author wrote (mcp-server §1.3).
func TestServerNarrationKeepsAuthorTextOut(t *testing.T) {
	log := &recordLog{}
	every(engine.LogObserver(slog.New(log), engine.Narration{Progress: slog.LevelDebug}))
	want := []string{"INFO Run started", "WARN Run failed", "WARN Model turn failed", "WARN Tool call failed"}
	if got := log.atLeast(slog.LevelInfo); !slices.Equal(got, want) {
		t.Fatalf("log lines at info and above %q, want %q", got, want)
	}
	all := log.atLeast(slog.LevelDebug)
	if len(all) != int(engine.DetailLua) {
		t.Fatalf("%d lines at debug, want one per event (%d)", len(all), engine.DetailLua)
	}
	for _, line := range all {
		if strings.Contains(line, "ecret") {
			t.Fatalf("a log line carries author text: %q", line)
		}
	}
}

// The run command's narration: progress at info, with the section and the
// text of log() lines.
func TestRunNarrationFollowsProgressAtInfo(t *testing.T) {
	log := &recordLog{}
	every(engine.LogObserver(slog.New(log), engine.Narration{Progress: slog.LevelInfo, AuthorText: true}))
	want := []string{
		"INFO Run started section=Secret section",
		"WARN Run failed section=Secret section",
		"INFO Section started section=Secret section",
		"INFO Model turn completed section=Secret section",
		"WARN Model turn failed section=Secret section",
		"INFO Tool call succeeded section=Secret section",
		"WARN Tool call failed section=Secret section",
		"INFO Lua: secret section=Secret section",
	}
	if got := log.atLeast(slog.LevelInfo); !slices.Equal(got, want) {
		t.Fatalf("log lines at info and above:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if all := log.atLeast(slog.LevelDebug); !slices.Contains(all, "DEBUG Store write succeeded section=Secret section") {
		t.Fatalf("the other events are not at debug: %q", all)
	}
}
