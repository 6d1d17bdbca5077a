package app

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/engine"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// last is the text after the last line clear: what the terminal shows on
// the status line now.
func (l *lockedBuffer) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	return s[strings.LastIndex(s, clearLine)+len(clearLine):]
}

func TestStatusLineFollowsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var term lockedBuffer
		line := NewStatusLine(&term)
		s := startStatus(line, "p.md")
		if got := term.last(); got != "running p.md · 0 turn(s) · 0s · 0 tokens" {
			t.Fatalf("start: %q", got)
		}
		s.Observe(engine.Event{Detail: engine.SectionStarted, Section: "Ask"})
		s.addTokens([]byte(`{"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`))
		s.Observe(engine.Event{Detail: engine.ModelTurnCompleted, Section: "Ask"})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := term.last(); got != "running p.md · Ask · 1 turn(s) · 2s · 15 tokens" {
			t.Fatalf("after 2s: %q", got)
		}
		// A log line goes above the status line, which is drawn again.
		line.Write([]byte("level=INFO msg=hello\n"))
		if got := term.last(); !strings.HasPrefix(got, "level=INFO msg=hello\nrunning p.md · Ask") {
			t.Fatalf("after a log line: %q", got)
		}
		s.stop()
		if got := term.last(); got != "" {
			t.Fatalf("after the run the status line is %q, want it cleared", got)
		}
	})
}
