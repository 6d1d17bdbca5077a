package pgstore

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/promptforge-go/promptforge/internal/pgtest"
)

// warnings keeps the Warn lines' retry_in attributes.
type warnings struct {
	mu      sync.Mutex
	retryIn []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Message != msgListen {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "retry_in" {
			w.mu.Lock()
			w.retryIn = append(w.retryIn, a.Value.String())
			w.mu.Unlock()
		}
		return true
	})
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// listener is the pid of the store's listening backend in this test's
// database, once it is not prev: the listener has (re)connected.
func listener(t *testing.T, admin *pgx.Conn, prev int32) int32 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var pid int32
		err := admin.QueryRow(t.Context(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN `+cancelChannel+`' AND pid <> $1`, prev).Scan(&pid)
		if err == nil {
			return pid
		}
		if err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener did not reconnect within 20s")
		}
		// Waiting for a reconnection the store makes on its own; the
		// assertions below are on what it logged, not on this timing.
		time.Sleep(10 * time.Millisecond)
	}
}

// Open returns only once it LISTENs, so a cancellation sent at once is
// heard; each time the listening connection drops, the listener reconnects
// after the first backoff again (every notification sent until then is
// lost), not after one that has grown over the store's life.
func TestListenerHearsAtOnceAndReconnectsPromptlyAfterEachDrop(t *testing.T) {
	dsn := pgtest.Need(t, testPG)
	w := &warnings{}
	s, err := Open(t.Context(), Options{DSN: dsn, Replica: "a", Logger: slog.New(w)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	heard := make(chan string, 8)
	s.OnCancel(func(id string) { heard <- id })
	hear := func(id string) {
		t.Helper()
		if err := s.Cancel(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-heard:
			if got != id {
				t.Fatalf("heard %q; want %q", got, id)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the cancellation of %s was not heard", id)
		}
	}
	hear("first")

	admin, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var pid int32
	for range 3 {
		pid = listener(t, admin, pid)
		if _, err := admin.Exec(t.Context(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
	}
	listener(t, admin, pid)
	hear("after")

	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.retryIn) != 3 {
		t.Fatalf("%d reconnection warnings %v; want 3", len(w.retryIn), w.retryIn)
	}
	for i, d := range w.retryIn {
		if d != listenBackoff.String() {
			t.Fatalf("drop %d was retried in %s (all: %v); want %s after a connection that was listening", i+1, d, w.retryIn, listenBackoff)
		}
	}
}
