package server

import (
	"context"
	"fmt"
	"slices"
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

// heartbeat is the longest a call with a progress token goes without a
// frame while its run is going. Clients that reset their timeout on
// progress (the TypeScript SDK's resetTimeoutOnProgress) then keep waiting
// through a long model turn or tool call, and the frame says what the run
// is waiting on.
const heartbeat = 10 * time.Second

// frame is one notifications/progress.
type frame struct {
	progress float64
	message  string
}

// notifyFunc sends one frame; the session's NotifyProgress in production.
type notifyFunc func(ctx context.Context, p *mcp.ProgressNotificationParams) error

// progress is a call's progress forwarding. When the call carried a
// progress token, it turns the run start and each section start into a
// frame on a bounded queue that one pump goroutine delivers, and the pump
// adds a heartbeat frame whenever heartbeat has passed without one, saying
// what the run is waiting on (a model turn, a tool call, or the section
// itself). Observe never blocks. It neither logs (the server's narration does, see
// serveNarration) nor counts turns (the engine's result does).
type progress struct {
	// token is the call's progress token; a call without one has no
	// progress at all (newProgress returns nil).
	token any

	mu       sync.Mutex
	queue    chan frame
	closed   bool
	sections int
	// beats counts the heartbeats since the last section frame: the k-th
	// is sent at sections + k/(k+1), so progress keeps growing without
	// reaching the next section's number.
	beats int
	// section and sectionSince are the section running, for a heartbeat
	// while nothing is awaited; waits are the model turns and tool calls
	// in flight, oldest first (fanout arms can wait concurrently).
	section      string
	sectionSince time.Time
	waits        []wait
	// started: the run-start frame (progress 0) is out, so a heartbeat,
	// which must come after it, may be sent.
	started bool

	dropped      atomic.Uint64 // queue full
	disconnected atomic.Uint64 // queue closed: the call was already answered

	stop     context.CancelFunc
	pumpDone chan struct{}
}

// newProgress builds the observer. With a non-nil token it starts the pump,
// which sends through notify with ctx's values (on streamable HTTP they
// route the frame to the call's own SSE stream) but not its cancellation:
// finish decides when the pump stops. Without a token (or notify) it is
// nil, which observes nothing and finishes at once: a call that asked for
// no progress, the common one, neither allocates nor holds one for its
// run's whole wait.
func newProgress(ctx context.Context, token any, notify notifyFunc) *progress {
	if token == nil || notify == nil {
		return nil
	}
	p := &progress{token: token}
	p.queue = make(chan frame, progressQueue)
	p.pumpDone = make(chan struct{})
	pumpCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = stop
	go p.pump(pumpCtx, notify)
	return p
}

// wait is a model turn or tool call in flight.
type wait struct {
	section string
	model   bool
	what    string // "the model (writer, llama3.1:latest)", "tool web_fetch"
	since   time.Time
}

// Observe implements [engine.Observer].
func (p *progress) Observe(ev engine.Event) {
	if p == nil {
		// No progress token: nothing to track, not even the wait's name
		// (built below).
		return
	}
	switch ev.Detail {
	case engine.RunStarted:
		p.emit(false, ev.Section)
	case engine.SectionStarted:
		p.emit(true, ev.Section)
	case engine.ModelTurnStarted:
		p.startWait(wait{section: ev.Section, model: true, what: "the model (" + ev.Subject + ")"})
	case engine.ToolCallStarted:
		p.startWait(wait{section: ev.Section, what: "tool " + ev.Subject})
	case engine.ModelTurnCompleted, engine.ModelTurnFailed:
		p.endWait(ev.Section, true)
	case engine.ToolCallSucceeded, engine.ToolCallFailed:
		p.endWait(ev.Section, false)
	}
}

func (p *progress) startWait(w wait) {
	w.since = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waits = append(p.waits, w)
}

// endWait drops the oldest wait of its kind in section. A call refused
// before it started (a tool out of scope) has none, and drops nothing.
func (p *progress) endWait(section string, model bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.waits, func(w wait) bool { return w.section == section && w.model == model })
	if i >= 0 {
		p.waits = slices.Delete(p.waits, i, i+1)
	}
}

// beat is the heartbeat frame, or false when there is none to send: the
// queue is closed, or it holds a frame the pump will send at once (a
// heartbeat computed now would overtake it and break progress order).
func (p *progress) beat() (frame, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !p.started || len(p.queue) > 0 {
		return frame{}, false
	}
	p.beats++
	f := frame{progress: float64(p.sections) + float64(p.beats)/float64(p.beats+1)}
	if len(p.waits) > 0 {
		w := p.waits[0]
		f.message = fmt.Sprintf("waiting for %s, %d s", w.what, seconds(time.Since(w.since)))
	} else {
		f.message = fmt.Sprintf("running %s, %d s", p.section, seconds(time.Since(p.sectionSince)))
	}
	return f, true
}

func seconds(d time.Duration) int64 { return int64(d.Round(time.Second) / time.Second) }

// emit queues a frame: progress 0 for the run start, then 1, 2, 3... for
// each section start. The counter and the enqueue share the lock, so the
// queue is in progress order even when fanout arms report concurrently.
func (p *progress) emit(section bool, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	if section {
		p.sections++
		n = p.sections
	}
	p.beats, p.started = 0, true
	p.section, p.sectionSince = message, time.Now()
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

// pump delivers frames in order until the queue is closed, and a
// heartbeat frame whenever heartbeat passes without one. The first send
// error ends it: the client is gone or the stream is, and every later
// frame is counted as disconnected rather than retried.
func (p *progress) pump(ctx context.Context, notify notifyFunc) {
	defer close(p.pumpDone)
	timer := time.NewTimer(heartbeat)
	defer timer.Stop()
	for {
		var f frame
		select {
		case queued, ok := <-p.queue:
			if !ok {
				return
			}
			f = queued
		case <-timer.C:
			beat, ok := p.beat()
			if !ok {
				timer.Reset(heartbeat)
				continue
			}
			f = beat
		}
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
		timer.Reset(heartbeat)
	}
}

// close stops accepting frames; later ones count as disconnected.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
}

// finish is called once the call has its answer, whatever it is. It closes
// the queue (a run still going after a running reply reports into a closed
// queue from then on), waits up to progressGrace for the pump to deliver
// what is queued, and otherwise stops the pump and waits for it to return.
// It returns the frames dropped while full and while closed.
func (p *progress) finish() (dropped, disconnected uint64) {
	if p == nil {
		return 0, 0
	}
	p.close()
	timer := time.NewTimer(progressGrace)
	select {
	case <-p.pumpDone:
	case <-timer.C:
		p.stop()
		<-p.pumpDone
	}
	timer.Stop()
	p.stop()
	return p.dropped.Load(), p.disconnected.Load()
}
