package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/devrun"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/store"
)

// DevOptions are the run command's dev loop (gateway-picker-webfetch §4.2):
// what it writes beside the prompt after every run, and the status line.
type DevOptions struct {
	// Dump reconciles the run's store into StoreDir after every run,
	// failed runs included.
	Dump bool
	// StoreDir is the dump directory; "" is <prompt stem>.store beside
	// the prompt file.
	StoreDir string
	// CaptureRaw writes each model turn's verbatim request and response
	// JSON into <StoreDir>/.trace/ (it implies Dump).
	CaptureRaw bool
	// Status, when set, shows a live status line (the terminal's): the
	// section, the model turns, the elapsed time and the tokens.
	Status *StatusLine
}

// storeDir is where the dump of the prompt at path goes.
func (d DevOptions) storeDir(path string) string {
	if d.StoreDir != "" {
		return d.StoreDir
	}
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".store"
}

// devRun is one run's share of the dev loop.
type devRun struct {
	r       *runner
	dir     string
	capture *devrun.Capture
	status  *runStatus
}

// startDev prepares the run's capture and status line.
func (r *runner) startDev() (*devRun, error) {
	d := &devRun{r: r}
	o := r.o.Dev
	if o.Dump || o.CaptureRaw {
		d.dir = o.storeDir(r.path)
	}
	if o.CaptureRaw {
		c, err := devrun.StartCapture(d.dir, devrun.QueueSize)
		if err != nil {
			return nil, fmt.Errorf("--capture-raw: %w", err)
		}
		d.capture = c
	}
	if o.Status != nil {
		d.status = startStatus(o.Status, filepath.Base(r.path))
	}
	return d, nil
}

func (d *devRun) observer() engine.Observer {
	if d.status == nil {
		return nil
	}
	return d.status
}

// debug is the engine's debug hook when a turn's bodies are wanted: the
// capture keeps them, the status line reads their token usage.
func (d *devRun) debug() func(engine.DebugTurn) {
	if d.capture == nil && d.status == nil {
		return nil
	}
	return func(t engine.DebugTurn) {
		if d.capture != nil {
			d.capture.Add(t.Turn, t.Request, t.Response)
		}
		if d.status != nil {
			d.status.addTokens(t.Response)
		}
	}
}

// finish ends the run's share: the status line stops, the capture is
// drained and the store dumped, each saying what it did on the log.
func (d *devRun) finish(st *store.Store) {
	log := d.r.logger
	if d.status != nil {
		d.status.stop()
	}
	if d.capture != nil {
		written, dropped, err := d.capture.Close()
		log.Info(devrun.Summary(d.capture.Dir(), written, dropped))
		if err != nil {
			log.Warn("some model turns could not be captured", "error", err)
		}
	}
	if d.dir == "" {
		return
	}
	res, err := devrun.Dump(d.dir, st.Snapshot())
	if err != nil {
		log.Warn("the run's store was not written", "error", err)
		return
	}
	for _, n := range res.Notes {
		log.Warn("store dump: " + n)
	}
	log.Info("store written", "dir", d.dir, "written", res.Written, "unchanged", res.Unchanged, "removed", res.Removed)
}

// watchDebounce is the quiet time after a save before the rerun, the
// reference dev runner's.
const watchDebounce = 300 * time.Millisecond

// Watch runs the prompt, then again after every save of its file, until
// ctx ends; report receives each run's value or error. Each run's store
// is dumped (o.Dev.Dump is implied). The environment is
// built once; a prompt that no longer parses is reported and watching
// goes on. It returns ctx's error once stopped, or a failure to prepare
// (which no save can fix: the command line or the configuration).
func Watch(ctx context.Context, o RunOptions, report func(value string, err error)) error {
	// Watching is the dev loop: each run's store is worth looking at.
	o.Dev.Dump = true
	r, err := prepareRun(ctx, o)
	if err != nil {
		return err
	}
	defer r.close()
	w, err := catalog.WatchFile(r.path, watchDebounce, r.logger)
	if err != nil {
		return fmt.Errorf("--watch: %w", err)
	}
	defer w.Close(context.WithoutCancel(ctx))
	report(r.run(ctx, r.p))
	for {
		r.logger.Info("watching for saves (Ctrl-C stops)", "prompt", r.path)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.Changes():
		}
		p, err := loadPromptFile(r.path)
		if err != nil {
			report("", err)
			continue
		}
		report(r.run(ctx, p))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// Interrupted reports whether err is a run that ended because ctx was
// cancelled (Ctrl-C), which the command exits 130 for.
func Interrupted(ctx context.Context, err error) bool {
	if ctx.Err() == nil {
		return false
	}
	var ee *engine.Error
	return err == nil || errors.Is(err, context.Canceled) || (errors.As(err, &ee) && ee.Cancelled())
}

// runStatus is one run's status line: what the run is doing, refreshed
// on each event and once a second for the elapsed time, by a goroutine
// that stop ends (the run's own, started and stopped by runner.run).
type runStatus struct {
	line   *StatusLine
	name   string
	start  time.Time
	ticker *time.Ticker
	done   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	section string
	turns   int
	tokens  int
}

func startStatus(line *StatusLine, name string) *runStatus {
	s := &runStatus{line: line, name: name, start: time.Now(), ticker: time.NewTicker(time.Second), done: make(chan struct{})}
	s.redraw()
	s.wg.Go(func() {
		for {
			select {
			case <-s.done:
				return
			case <-s.ticker.C:
				s.redraw()
			}
		}
	})
	return s
}

func (s *runStatus) Observe(ev engine.Event) {
	s.mu.Lock()
	switch ev.Detail {
	case engine.SectionStarted:
		s.section = ev.Section
	case engine.ModelTurnCompleted:
		s.turns++
	default:
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.redraw()
}

// addTokens adds a reply's reported usage.
func (s *runStatus) addTokens(resp []byte) {
	var r struct {
		Usage struct {
			Total int `json:"total_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(resp, &r) == nil {
		s.mu.Lock()
		s.tokens += r.Usage.Total
		s.mu.Unlock()
	}
}

func (s *runStatus) redraw() {
	s.mu.Lock()
	text := fmt.Sprintf("running %s", s.name)
	if s.section != "" {
		text += " · " + s.section
	}
	text += fmt.Sprintf(" · %d turn(s) · %ds · %d tokens", s.turns, int(time.Since(s.start).Seconds()), s.tokens)
	s.mu.Unlock()
	s.line.Set(text)
}

func (s *runStatus) stop() {
	close(s.done)
	s.ticker.Stop()
	s.wg.Wait()
	s.line.Set("")
}

// StatusLine is a terminal's live status line: Set replaces it, and Write
// (the logger's writer) clears it, writes the log line and draws it again
// below, so log lines and the status line never share a line.
type StatusLine struct {
	mu   sync.Mutex
	w    interface{ Write([]byte) (int, error) }
	text string
}

// NewStatusLine draws on w, a terminal.
func NewStatusLine(w interface{ Write([]byte) (int, error) }) *StatusLine {
	return &StatusLine{w: w}
}

// clearLine returns the cursor to the line's start and erases the line.
const clearLine = "\r\x1b[K"

// Set replaces the status text; "" removes the line.
func (s *StatusLine) Set(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = text
	_, _ = s.w.Write([]byte(clearLine + text))
}

// Write writes p (whole lines) above the status line.
func (s *StatusLine) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(append([]byte(clearLine), p...)); err != nil {
		return 0, err
	}
	if s.text != "" {
		_, _ = s.w.Write([]byte(s.text))
	}
	return len(p), nil
}
