package runs

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/promptforge-go/promptforge/internal/pgtest"
)

// testPG is the PostgreSQL the store tests (stores_test.go) run against;
// nil when it is not installed outside CI.
var testPG *pgtest.Server

// Every run goroutine must be gone when the tests end: the registry owns
// them, and Close (or the run returning) is what stops them.
func TestMain(m *testing.M) {
	pgtest.Main(m, &testPG, true, nil)
}

// logLine is one captured log record, flattened for assertions.
type logLine struct {
	Level   slog.Level
	Message string
	Attrs   map[string]any
}

// capture is a slog.Handler that keeps every record, so tests can assert the
// exact lines the registry wrote.
type capture struct {
	mu    sync.Mutex
	lines []logLine
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }

func (c *capture) Handle(_ context.Context, rec slog.Record) error {
	line := logLine{Level: rec.Level, Message: rec.Message, Attrs: map[string]any{}}
	rec.Attrs(func(a slog.Attr) bool {
		line.Attrs[a.Key] = a.Value.Resolve().Any()
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, line)
	return nil
}

func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *capture) WithGroup(string) slog.Handler      { return c }

// at returns the captured lines at level, in order.
func (c *capture) at(level slog.Level) []logLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(c.lines), func(l logLine) bool { return l.Level != level })
}

// withMessage returns the captured lines carrying msg, at any level.
func (c *capture) withMessage(msg string) []logLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(c.lines), func(l logLine) bool { return l.Message != msg })
}
