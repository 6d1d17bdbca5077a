package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
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

// Watch builds the environment once: a rerun reads the prompt again but
// fetches no second model list, and reaches the gateway with the same
// client.
func TestWatchReusesTheEnvironment(t *testing.T) {
	g := gatewaytest.New(t)
	g.Enqueue(gatewaytest.Text("first"), gatewaytest.Text("second"))
	dir := t.TempDir()
	path := filepath.Join(dir, "p.md")
	ask := func(what string) string {
		return promptFile("p", "A prompt.", "", "# P\n\n```lua\nmodels.default(\"m\", \"A general assistant model for tests\")\n```\n\n## Ask\n\n"+what+"\n")
	}
	if err := os.WriteFile(path, []byte(ask("Say one.")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	values := make(chan string, 4)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, RunOptions{
			Target: path,
			Logger: discard(),
			LookupEnv: func(k string) (string, bool) {
				v, ok := map[string]string{"PROMPTFORGE_GATEWAY_URL": g.URL(), "PROMPTFORGE_GATEWAY_API_KEY": g.APIKey()}[k]
				return v, ok
			},
		}, func(v string, err error) {
			if err != nil {
				v = "error: " + err.Error()
			}
			values <- v
		})
	}()
	next := func() string {
		select {
		case v := <-values:
			return v
		case <-time.After(time.Minute):
			t.Fatal("no run reported")
		}
		return ""
	}
	if v := next(); v != "first" {
		t.Fatalf("first run: %q", v)
	}
	if err := os.WriteFile(path, []byte(ask("Say two.")), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := next(); v != "second" {
		t.Fatalf("rerun: %q", v)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch returned %v, want the cancellation", err)
	}
	if n := g.ModelsCalls(); n != 1 {
		t.Errorf("the model list was fetched %d times, want once", n)
	}
	reqs := g.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "Say two.") {
		t.Errorf("the rerun did not read the saved prompt: %d requests", len(reqs))
	}
	// --watch dumps: the store directory exists beside the prompt.
	if _, err := os.Stat(filepath.Join(dir, "p.store")); err != nil {
		t.Errorf("no store directory: %v", err)
	}
}
