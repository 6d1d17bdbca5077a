package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/engine"
)

// progressQueue bounds the frames waiting for the pump. A run reports from
// its own goroutine and must never wait on a slow client, so a full queue
// drops frames instead.
const progressQueue = 64

// progressGrace bounds how long a reply waits for queued frames to reach
// the client, so progress can never hold an answer back for long.
const progressGrace = 250 * time.Millisecond

// frame is one notifications/progress.
type frame struct {
	progress float64
	message  string
}

// notifyFunc sends one frame; the session's NotifyProgress in production.
type notifyFunc func(ctx context.Context, p *mcp.ProgressNotificationParams) error

// progress is a call's progress forwarding. When the call carried a
// progress token, it turns the run start and each section start into a
// frame on a bounded queue that one pump goroutine delivers. Observe never
// blocks. It neither logs (the server's narration does, see
// serveNarration) nor counts turns (the engine's result does).
type progress struct {
	token any // nil: the caller asked for no progress

	mu       sync.Mutex
	queue    chan frame // nil without a token
	closed   bool
	sections int

	dropped      atomic.Uint64 // queue full
	disconnected atomic.Uint64 // queue closed: the call was already answered

	stop     context.CancelFunc
	pumpDone chan struct{}
}

// newProgress builds the observer. With a non-nil token it starts the pump,
// which sends through notify with ctx's values (on streamable HTTP they
// route the frame to the call's own SSE stream) but not its cancellation:
// finish decides when the pump stops.
func newProgress(ctx context.Context, token any, notify notifyFunc) *progress {
	p := &progress{token: token}
	if token == nil || notify == nil {
		p.token = nil
		return p
	}
	p.queue = make(chan frame, progressQueue)
	p.pumpDone = make(chan struct{})
	pumpCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = stop
	go p.pump(pumpCtx, notify)
	return p
}

// Observe implements [engine.Observer].
func (p *progress) Observe(ev engine.Event) {
	switch ev.Detail {
	case engine.RunStarted:
		p.emit(false, ev.Section)
	case engine.SectionStarted:
		p.emit(true, ev.Section)
	}
}

// emit queues a frame: progress 0 for the run start, then 1, 2, 3... for
// each section start. The counter and the enqueue share the lock, so the
// queue is in progress order even when fanout arms report concurrently.
func (p *progress) emit(section bool, message string) {
	if p.queue == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	if section {
		p.sections++
		n = p.sections
	}
	if p.closed {
		p.disconnected.Add(1)
		return
	}
	select {
	case p.queue <- frame{progress: float64(n), message: message}:
	default:
		p.dropped.Add(1)
	}
}

// pump delivers frames in order until the queue is closed. The first send
// error ends it: the client is gone or the stream is, and every later
// frame is counted as disconnected rather than retried.
func (p *progress) pump(ctx context.Context, notify notifyFunc) {
	defer close(p.pumpDone)
	for f := range p.queue {
		err := notify(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: p.token,
			Progress:      f.progress,
			Message:       f.message,
		})
		if err != nil {
			p.close()
			for range p.queue {
				p.disconnected.Add(1)
			}
			return
		}
	}
}

// close stops accepting frames; later ones count as disconnected.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		if p.queue != nil {
			close(p.queue)
		}
	}
}

// finish is called once the call has its answer, whatever it is. It closes
// the queue (a run still going after a running reply reports into a closed
// queue from then on), waits up to progressGrace for the pump to deliver
// what is queued, and otherwise stops the pump and waits for it to return.
// It returns the frames dropped while full and while closed.
func (p *progress) finish() (dropped, disconnected uint64) {
	p.close()
	if p.pumpDone != nil {
		timer := time.NewTimer(progressGrace)
		select {
		case <-p.pumpDone:
		case <-timer.C:
			p.stop()
			<-p.pumpDone
		}
		timer.Stop()
		p.stop()
	}
	return p.dropped.Load(), p.disconnected.Load()
}
