//go:build unix

package catalog

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO where a prompt file is expected (a [prompts.NAME] file, or one
// that replaced a listed file) does not hold the resolution: with no
// writer, readFile's non-blocking open returns at once and the FIFO reads
// as empty, where os.Open would wait for a writer for ever.
func TestReadFileDoesNotBlockOnAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe.md")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	type result struct {
		st      *fileState
		problem readProblem
	}
	done := make(chan result, 1)
	go func() {
		st, problem := readFile(path, nil, nil, time.Now())
		done <- result{st, problem}
	}()
	select {
	case r := <-done:
		if r.problem != "" {
			t.Fatalf("a FIFO with no writer read as %q; want it read as empty", r.problem)
		}
		if r.st.c.source != "" {
			t.Fatalf("a FIFO with no writer read as %q; want empty", r.st.c.source)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readFile blocked on a FIFO with no writer")
	}
}
