package devrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// QueueSize is how many captured turns may wait for the writer; more are
// dropped (and counted), so a slow disk never holds a run up.
const QueueSize = 64

type turn struct {
	n         int
	req, resp []byte
}

// A Capture writes each model turn's verbatim request and response to
// <dir>/.trace/turn-N-request.json and turn-N-response.json, owner-only
// and atomically, from a bounded queue.
type Capture struct {
	dir   string
	queue chan turn
	done  chan struct{}

	mu      sync.Mutex
	closed  bool
	dropped int
	written int
	errs    []error
}

// StartCapture prepares <dir>/.trace (owner-only; the previous run's turn
// files are removed, so it holds one run's turns) and starts the writer.
func StartCapture(dir string, queue int) (*Capture, error) {
	if err := ownDir(dir); err != nil {
		return nil, err
	}
	trace := filepath.Join(dir, TraceDir)
	if err := ownDir(trace); err != nil {
		return nil, err
	}
	old, _ := filepath.Glob(filepath.Join(trace, "turn-*.json"))
	for _, f := range old {
		os.Remove(f)
	}
	if queue < 1 {
		queue = QueueSize
	}
	c := &Capture{dir: trace, queue: make(chan turn, queue), done: make(chan struct{})}
	go c.write()
	return c, nil
}

// Dir is the .trace directory.
func (c *Capture) Dir() string { return c.dir }

// Add queues turn n's bodies without blocking; a full queue drops it.
// The bodies must not change afterwards.
func (c *Capture) Add(n int, request, response []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.dropped++
		return
	}
	select {
	case c.queue <- turn{n, request, response}:
	default:
		c.dropped++
	}
}

// Close waits for the queued turns to be written and reports how many
// turns were written and dropped, and the first write errors.
func (c *Capture) Close() (written, dropped int, err error) {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.queue)
	}
	c.mu.Unlock()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written, c.dropped, errors.Join(c.errs...)
}

func (c *Capture) write() {
	defer close(c.done)
	for t := range c.queue {
		base := filepath.Join(c.dir, "turn-"+strconv.Itoa(t.n))
		err := errors.Join(writeAtomic(base+"-request.json", t.req), writeAtomic(base+"-response.json", t.resp))
		c.mu.Lock()
		if err != nil {
			if len(c.errs) < 3 {
				c.errs = append(c.errs, fmt.Errorf("turn %d: %w", t.n, err))
			}
		} else {
			c.written++
		}
		c.mu.Unlock()
	}
}

// Summary is the line a run ends its capture with.
func Summary(dir string, written, dropped int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "captured %d model turn(s) in %s", written, dir)
	if dropped > 0 {
		fmt.Fprintf(&b, "; %d dropped because the writer fell behind", dropped)
	}
	return b.String()
}
