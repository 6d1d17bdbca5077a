package runtrace

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/engine"
)

// Kinds of steps.
const (
	KindH1      = "h1"
	KindSection = "section"
	KindArm     = "fanout_arm"
	KindTurn    = "model_turn"
	KindTool    = "tool_call"
	KindLog     = "log"
)

// Step statuses.
const (
	StatusRunning   = "running"
	StatusOK        = "ok"
	StatusFailed    = "failed"
	StatusExhausted = "exhausted"
	StatusCancelled = "cancelled"
)

// Defaults of [Options].
const (
	DefaultMaxSteps        = 2000
	DefaultMaxContentBytes = 256 << 10
)

// Options bound a Recorder.
type Options struct {
	// MaxSteps caps the steps a trace keeps; 0 is DefaultMaxSteps.
	MaxSteps int
	// CaptureContent keeps the verbatim text the engine passes with
	// engine.Options.CaptureContent, and log() lines' text.
	CaptureContent bool
	// MaxContentBytes caps the captured text of one trace together; 0 is
	// DefaultMaxContentBytes.
	MaxContentBytes int
	// NewSink, when set, makes each recorder's Sink, which sees every
	// step start and end of that run.
	NewSink func() Sink
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Sink follows a run's steps as they happen (an exporter). Calls for one run
// are serialised by its Recorder; a Sink must not block.
type Sink interface {
	// RunStarted and RunEnded bracket the run: its trace's header.
	RunStarted(t *Trace)
	RunEnded(t *Trace)
	// StepStarted is called when s begins; parent is its enclosing step,
	// nil for a top-level one. StepEnded is called once s has ended (a
	// log line ends as it starts).
	StepStarted(s, parent *Step)
	StepEnded(s *Step)
}

// Trace is one run's recorded trace, as the JSON of the trace endpoint and
// check_run's include_trace give it.
type Trace struct {
	RunID   string    `json:"run_id"`
	Prompt  string    `json:"prompt"`
	Started time.Time `json:"started"`
	// Status is "running" until the run ends, then the run record's status
	// ("completed" or "failed"), as the run's body hands it to the
	// registry (the server's words the trace's end as the record does,
	// and a failed record restates the header, so that a cancellation
	// that reworded the record after the body ended the trace shows in
	// both); with [runs].store, a record another replica wrote first,
	// once this one's lease had expired, stands instead, and the trace
	// keeps what the run did here unless that record is failed.
	Status     string `json:"status"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	Turns      int    `json:"turns"`
	Tokens     Tokens `json:"tokens"`
	// ContentCaptured says whether text fields were kept
	// ([observability] capture_content).
	ContentCaptured bool   `json:"content_captured"`
	Steps           []Step `json:"steps"`
	// Dropped counts the steps past the bound that were not kept.
	Dropped int `json:"dropped_steps,omitempty"`
}

// Tokens are usage counts as the model replies reported them.
type Tokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
}

// Info is what a step measured (the engine's, kept as it reported it).
type Info = engine.Info

// Step is one thing the run did. Times are milliseconds from the run's
// start; EndMS is 0 while the step runs.
type Step struct {
	ID     int    `json:"id"`
	Parent int    `json:"parent"` // the enclosing step's ID; 0 is the run
	Kind   string `json:"kind"`
	// Name is the section heading, the model id or the tool alias.
	Name string `json:"name,omitempty"`
	// Via is how a unit was entered: walk, jump, execute, fanout, h1.
	Via     string  `json:"via,omitempty"`
	StartMS float64 `json:"start_ms"`
	EndMS   float64 `json:"end_ms,omitempty"`
	Status  string  `json:"status"`
	Tokens  *Tokens `json:"tokens,omitempty"`
	// Info is what a model turn, tool call or arm measured.
	Info *engine.Info `json:"info,omitempty"`
	// Message is a log() line's text, only with capture.
	Message string `json:"message,omitempty"`
}

// DurationMS is the step's duration; 0 while it runs.
func (s *Step) DurationMS() float64 {
	if s.EndMS == 0 {
		return 0
	}
	return s.EndMS - s.StartMS
}

// node is a step and what the recorder needs to place its children.
type node struct {
	step   Step
	parent *node
	// open are the turns and tool calls of a unit still going, innermost
	// last: a local tool's Lua may start a model turn inside a tool call.
	open []*node
}

// Recorder builds one run's trace from its engine events. It implements
// engine.Tracer.
//
// A Recorder is allocated for every traced run and kept with its record, so
// its size is kept within 448 bytes (TestRecorder_FitsASmallSizeClass): a
// small size class without a type header, less to clear, and less for the
// collector to account and to mark while the record is retained. Hence the
// 32-bit counters, the booleans side by side, the header without the Steps
// a Snapshot makes, and what only some runs need (an exporter, content
// capture, a clock other than the real one) behind x.
type Recorder struct {
	// x is nil for a run with no export, no capture and the real clock:
	// the server's default, content capture off.
	x *extra
	// next gets the ends of model turns before the recorder does (see
	// Book.Begin): the tracer the run would have without a trace, so that
	// tracing a run adds no tracer of its own to call.
	next engine.Tracer
	mu   sync.Mutex
	// t is the trace's header (its Steps are made by Snapshot from kept);
	// t.ContentCaptured is Options.CaptureContent. t.Started is the run's
	// start on the recorder's clock, with a monotonic reading on the real
	// one.
	t header
	// units are the units going, by engine unit id: a few at a time (a
	// chain's depth, fanout arms in flight), so a slice beats a map.
	units    []openUnit
	kept     []*node // the steps kept, in ID order
	maxSteps int32   // Options.MaxSteps
	nextID   int32
	// A small run (most runs) keeps its units and steps in these,
	// without allocating.
	unitsBuf [2]openUnit
	keptBuf  [4]*node
	// firstNode is the run's first step (a Lua-only run's only one), so
	// that it is not an allocation of its own.
	firstNode node
	// h1Step is set when the H1 has a step. An H1 with nothing in it
	// reports only its teardown, and its end (LuaTeardownSucceeded) is
	// then dropped before the lock, like the events a trace ignores (a
	// Lua-only run's H1 is usually empty). The H1's events all come from
	// the run's own goroutine, in order, so the flag is read after the
	// write it needs to see; atomic for the race detector's sake and any
	// tracer that forwards events from elsewhere.
	h1Step atomic.Bool
	done   bool
	// filed is set by the Book (under its lock, not mu) once the run is
	// with the finished ones.
	filed bool
}

// extra is what only some runs' recorders need.
type extra struct {
	sink Sink // nil: no export
	// now is Options.Now, nil for the real clock: a step's time is then
	// time.Since(t.Started), which reads only the monotonic clock (a
	// time.Now reads the wall clock too, and a run reads the clock at
	// every step's start and end).
	now    func() time.Time
	budget int // captured bytes left
}

// header is a trace's header as a Recorder keeps it: a [Trace] without its
// Steps (Snapshot makes them) and with 32-bit counts (see Recorder).
type header struct {
	RunID, Prompt   string
	Started         time.Time
	Status          string
	DurationMS      int64
	Error           string
	Tokens          Tokens
	Turns, Dropped  int32
	ContentCaptured bool
}

// trace is the header as a Trace, without steps.
func (h *header) trace() Trace {
	return Trace{RunID: h.RunID, Prompt: h.Prompt, Started: h.Started, Status: h.Status, DurationMS: h.DurationMS,
		Error: h.Error, Turns: int(h.Turns), Tokens: h.Tokens, ContentCaptured: h.ContentCaptured, Dropped: int(h.Dropped)}
}

// count is n as a header's count: a run of 2³¹ turns, far past any limit,
// keeps the largest rather than wrap.
func count(n int) int32 { return int32(min(max(n, 0), math.MaxInt32)) }

type openUnit struct {
	id   uint32
	node *node
}

func (r *Recorder) lookup(id uint32) *node {
	for _, u := range r.units {
		if u.id == id {
			return u.node
		}
	}
	return nil
}

func (r *Recorder) forget(id uint32) {
	for i, u := range r.units {
		if u.id == id {
			r.units = append(r.units[:i], r.units[i+1:]...)
			return
		}
	}
}

// NewRecorder starts recording run id of prompt name.
func NewRecorder(id, name string, opts Options) *Recorder {
	var start time.Time
	if opts.Now == nil {
		start = time.Now()
	} else {
		start = opts.Now()
	}
	return newRecorder(id, name, opts, start, nil)
}

// newRecorder is NewRecorder with the run's start already read (start)
// and the tracer to hand the ends of model turns to (next, may be nil).
func newRecorder(id, name string, opts Options, start time.Time, next engine.Tracer) *Recorder {
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = DefaultMaxContentBytes
	}
	// Field by field: a composite literal of the whole Recorder is built
	// aside and copied in (and, while the GC marks, through its write
	// barriers).
	r := new(Recorder)
	r.maxSteps, r.next = int32(min(opts.MaxSteps, math.MaxInt32)), next
	r.t.RunID, r.t.Prompt, r.t.Started, r.t.Status, r.t.ContentCaptured = id, name, start, StatusRunning, opts.CaptureContent
	r.units, r.kept = r.unitsBuf[:0], r.keptBuf[:0]
	if opts.NewSink != nil || opts.CaptureContent || opts.Now != nil {
		r.x = &extra{now: opts.Now, budget: opts.MaxContentBytes}
	}
	if opts.NewSink != nil {
		r.x.sink = opts.NewSink()
		t := r.t.trace()
		r.x.sink.RunStarted(&t)
	}
	return r
}

// Started is the run's start as the trace has it (with a monotonic reading
// on the real clock): what the server hands the run registry as the
// record's start (runs.Registry.LaunchWith), so that both start at the
// same instant, read once. It does not change once the recorder is made.
// A nil Recorder (traces off) has the zero time, which has the registry
// read the start itself.
func (r *Recorder) Started() time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.t.Started
}

// CaptureContent is what the run's engine.Options.CaptureContent must be.
func (r *Recorder) CaptureContent() bool { return r.t.ContentCaptured }

// Rewindable reports whether Rewind can take the trace back to its start:
// a recorder with no exporter (whose spans, once sent, cannot be taken
// back), no content capture and the real clock, the server's default. A
// nil Recorder (traces off) is rewindable: there is nothing to rewind.
func (r *Recorder) Rewindable() bool { return r == nil || r.x == nil }

// Rewind takes a rewindable trace back to the state NewRecorder left it
// in, keeping its start: what a run's body recorded is forgotten, as if
// it had not run. The server rewinds the trace of a speculative attempt
// that stopped before the run is started again (runs.Registry.LaunchInline);
// a reader between the two sees the attempt's steps, then none. It
// reports false, and changes nothing, when the trace is not rewindable
// or has ended.
func (r *Recorder) Rewind() bool {
	if r == nil {
		return true
	}
	if r.x != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return false
	}
	r.unitsBuf, r.keptBuf, r.firstNode = [2]openUnit{}, [4]*node{}, node{}
	r.units, r.kept, r.nextID = r.unitsBuf[:0], r.keptBuf[:0], 0
	r.t.Status, r.t.Error, r.t.Tokens, r.t.Turns, r.t.Dropped, r.t.DurationMS = StatusRunning, "", Tokens{}, 0, 0, 0
	r.h1Step.Store(false)
	return true
}

func (r *Recorder) since() float64 {
	// At least a microsecond, so that an ended step never reads as
	// running (EndMS 0).
	return max(float64(r.elapsed().Microseconds())/1000, 0.001)
}

// elapsed is the time since the run's start.
func (r *Recorder) elapsed() time.Duration {
	if r.x == nil || r.x.now == nil {
		return time.Since(r.t.Started)
	}
	return r.x.now().Sub(r.t.Started)
}

// ignored are the events a trace does not record (Lua phases, store
// operations, scope checks; the run's start and success, which the
// recorder's making and Finish stand for): the engine does not hand them to
// a tracer, but one that forwards every event may, so they are dropped
// before the lock. The H1's are kept but its teardown's start, since its
// first event, whichever it is, starts its step; an H1 with nothing in it
// reports only its teardown (the engine then hands over none of it), and
// has no step.
var ignored = func() (set [engine.SectionFailed + 1]bool) {
	for _, d := range []engine.Detail{
		engine.LuaCompilationStarted, engine.LuaCompilationSucceeded, engine.LuaCompilationFailed,
		engine.LuaSharedLoadStarted, engine.LuaSharedLoadSucceeded, engine.LuaSharedLoadFailed,
		engine.LuaChunkStarted, engine.LuaChunkSucceeded, engine.LuaChunkFailed,
		engine.LuaReplyBindingStarted, engine.LuaReplyBindingSucceeded, engine.LuaReplyBindingFailed,
		engine.LuaTeardownStarted, engine.LuaTeardownSucceeded,
		engine.ToolScopeValidationStarted, engine.ToolScopeValidationSucceeded, engine.ToolScopeValidationFailed,
		engine.StoreWriteSucceeded, engine.StoreWriteFailed, engine.StoreAppendSucceeded, engine.StoreAppendFailed,
		engine.StoreReadSucceeded, engine.StoreReadFailed, engine.StoreReadNumberedSucceeded, engine.StoreReadNumberedFailed,
		engine.StoreReplaceSucceeded, engine.StoreReplaceFailed, engine.StoreDeleteSucceeded, engine.StoreDeleteFailed,
		engine.StoreGlobSucceeded, engine.StoreGlobFailed, engine.ModelTurnTruncated,
		engine.RunStarted, engine.RunSucceeded,
	} {
		set[d] = true
	}
	return set
}()

// waits are the events that start (status "") or end a model turn or a
// tool call, by detail.
var waits = func() (w [engine.SectionFailed + 1]struct{ kind, status string }) {
	w[engine.ModelTurnStarted].kind = KindTurn
	w[engine.ModelTurnCompleted].kind, w[engine.ModelTurnCompleted].status = KindTurn, StatusOK
	w[engine.ModelTurnFailed].kind, w[engine.ModelTurnFailed].status = KindTurn, StatusFailed
	w[engine.ToolCallStarted].kind = KindTool
	w[engine.ToolCallSucceeded].kind, w[engine.ToolCallSucceeded].status = KindTool, StatusOK
	w[engine.ToolCallFailed].kind, w[engine.ToolCallFailed].status = KindTool, StatusFailed
	return w
}()

// unitEnds are the events that end a section or an arm, with its status,
// by detail (an array, not a map: it is read for most events a trace keeps).
var unitEnds = func() (e [engine.SectionFailed + 1]string) {
	e[engine.SectionFinished] = StatusOK
	e[engine.SectionFailed] = StatusFailed
	e[engine.FanoutArmSucceeded] = StatusOK
	e[engine.FanoutArmExhausted] = StatusExhausted
	e[engine.FanoutArmCancelled] = StatusCancelled
	e[engine.FanoutArmFailed] = StatusFailed
	return e
}()

// Observe implements engine.Tracer.
//
// A section's start and end, a Lua-only run's only events, take a short
// path of their own: what a traced run costs beyond its instructions is
// mostly its code's cache lines, fetched anew each run once the run's Lua
// has evicted them (docs/benchmarks.md, Run traces), so the common case
// runs as few of them as it can. Its effect is the general path's for
// these events.
func (r *Recorder) Observe(ev engine.TraceEvent) {
	switch {
	case ev.Detail == engine.SectionStarted:
		r.mu.Lock()
		defer r.mu.Unlock() // a Sink may panic
		if !r.done {
			r.unit(ev)
		}
		return
	case ev.Detail == engine.SectionFinished && ev.Via != engine.ViaFanout:
		// (An arm's own SectionFinished is not its end: see observe.)
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.done {
			r.endUnit(ev.Unit, r.unit(ev), StatusOK, ev.Info)
		}
		return
	}
	r.observe(ev)
}

// observe is Observe's general path.
func (r *Recorder) observe(ev engine.TraceEvent) {
	if r.next != nil && (ev.Detail == engine.ModelTurnCompleted || ev.Detail == engine.ModelTurnFailed) {
		// What next would get with engine.Options.TraceTurnsOnly; before
		// the recorder, which clears an Info's text without capture.
		r.next.Observe(ev)
	}
	if int(ev.Detail) < len(ignored) && ignored[ev.Detail] && (ev.Via != engine.ViaH1 || ev.Detail == engine.LuaTeardownStarted) {
		return
	}
	if ev.Detail == engine.LuaTeardownSucceeded && !r.h1Step.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	if ev.Detail == engine.RunFailed {
		if ev.Info != nil {
			r.t.Error = ev.Info.Err
		}
		return
	}
	if ev.Detail == engine.LuaTeardownSucceeded {
		// Only the H1's gets here: its end, if anything in it started
		// its step.
		if n := r.lookup(ev.Unit); n != nil {
			r.endUnit(ev.Unit, n, StatusOK, nil)
		}
		return
	}
	u := r.unit(ev)
	if int(ev.Detail) < len(waits) && waits[ev.Detail].kind != "" {
		w := waits[ev.Detail]
		if w.status == "" {
			r.push(u, w.kind, ev.Info)
		} else {
			r.pop(u, w.kind, w.status, ev.Info)
		}
		return
	}
	status := ""
	if int(ev.Detail) < len(unitEnds) {
		status = unitEnds[ev.Detail]
	}
	if status != "" && (ev.Detail != engine.SectionFinished || ev.Via != engine.ViaFanout) {
		// An arm's own SectionFinished is not its end: its Fanout arm
		// event, after it, is.
		r.endUnit(ev.Unit, u, status, ev.Info)
		return
	}
	switch ev.Detail {
	case engine.DetailLua:
		n := r.add(u.innermost(), KindLog, "", nil)
		if r.t.ContentCaptured {
			n.step.Message = r.capture(trimLua(ev.Message))
		}
		r.end(n, StatusOK)
	case engine.FanoutArmStarted:
		u.step.Info = ev.Info
	}
}

func trimLua(msg string) string {
	const prefix = "Lua: "
	if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

// unit is the node of ev's unit, made on its first event (an arm's first is
// FanoutArmStarted, a section's SectionStarted, but a tracer must not depend
// on which comes first).
func (r *Recorder) unit(ev engine.TraceEvent) *node {
	if n := r.lookup(ev.Unit); n != nil {
		return n
	}
	var parent *node
	if ev.Parent != 0 {
		parent = r.lookup(ev.Parent).innermost()
	}
	kind := KindSection
	switch ev.Via {
	case engine.ViaH1:
		kind = KindH1
	case engine.ViaFanout:
		kind = KindArm
	}
	n := r.add(parent, kind, ev.Section, nil)
	n.step.Via = ev.Via.String()
	if kind == KindH1 {
		r.h1Step.Store(true)
	}
	r.units = append(r.units, openUnit{ev.Unit, n})
	return n
}

// innermost is where a child of n's unit goes: inside the open tool call or
// turn, if any.
func (n *node) innermost() *node {
	if n == nil {
		return nil
	}
	if len(n.open) > 0 {
		return n.open[len(n.open)-1]
	}
	return n
}

func (r *Recorder) add(parent *node, kind, name string, info *engine.Info) *node {
	if r.nextID < math.MaxInt32 {
		// 32 bits (see Recorder): a run of 2³¹ steps, far past any
		// MaxSteps, gives its last ones the same id rather than wrap.
		r.nextID++
	}
	var n *node
	if r.nextID == 1 {
		n = &r.firstNode
	} else {
		n = new(node)
	}
	// Field by field into the zeroed node: a Step literal is built aside
	// and copied in, through the write barriers while the collector marks.
	n.parent = parent
	n.step.ID, n.step.Kind, n.step.Name, n.step.StartMS, n.step.Status, n.step.Info = int(r.nextID), kind, name, r.since(), StatusRunning, info
	if parent != nil {
		n.step.Parent = parent.step.ID
	}
	if len(r.kept) < int(r.maxSteps) {
		r.kept = append(r.kept, n)
	} else {
		r.t.Dropped = count(int(r.t.Dropped) + 1)
	}
	if r.x != nil && r.x.sink != nil {
		var ps *Step
		if parent != nil {
			ps = &parent.step
		}
		r.x.sink.StepStarted(&n.step, ps)
	}
	return n
}

func (r *Recorder) push(u *node, kind string, info *engine.Info) {
	name := ""
	if info != nil {
		r.captureInfo(info)
		name = info.Model
		if kind == KindTool {
			name = info.Tool
		}
	}
	n := r.add(u.innermost(), kind, name, info)
	u.open = append(u.open, n)
}

// pop ends the innermost open step of kind in u, merging what its end
// measured into what its start did. A tool call refused before it started
// (out of scope) has no open step: it is recorded as one that ended at once.
func (r *Recorder) pop(u *node, kind, status string, info *engine.Info) {
	var n *node
	for i := len(u.open) - 1; i >= 0; i-- {
		if u.open[i].step.Kind == kind {
			n = u.open[i]
			u.open = append(u.open[:i], u.open[i+1:]...)
			break
		}
	}
	if n == nil {
		name := ""
		if info != nil {
			name = info.Tool
		}
		n = r.add(u.innermost(), kind, name, nil)
	}
	if info != nil {
		r.captureInfo(info)
		n.step.Info = merge(n.step.Info, info)
		if kind == KindTurn && (info.Usage.PromptTokens != 0 || info.Usage.CompletionTokens != 0) {
			n.step.Tokens = &Tokens{Prompt: info.Usage.PromptTokens, Completion: info.Usage.CompletionTokens}
			r.t.Tokens.Prompt += info.Usage.PromptTokens
			r.t.Tokens.Completion += info.Usage.CompletionTokens
		}
		if kind == KindTurn && status == StatusOK {
			r.t.Turns = count(int(r.t.Turns) + 1)
		}
	}
	r.end(n, status)
}

// merge adds what end measured to what start did.
func merge(start, end *engine.Info) *engine.Info {
	if start == nil {
		return end
	}
	m := *start
	if end.Model != "" {
		m.Model = end.Model
	}
	if end.PromptBytes != 0 {
		m.PromptBytes = end.PromptBytes
	}
	m.ReplyBytes, m.Usage, m.Finish, m.ToolCalls = end.ReplyBytes, end.Usage, end.Finish, end.ToolCalls
	m.ResultBytes, m.Err, m.Reply, m.Result = end.ResultBytes, end.Err, end.Reply, end.Result
	return &m
}

func (r *Recorder) endUnit(id uint32, u *node, status string, info *engine.Info) {
	// Whatever the unit left open ended with it (a cancelled turn
	// reports nothing).
	for i := len(u.open) - 1; i >= 0; i-- {
		r.end(u.open[i], StatusCancelled)
	}
	u.open = nil
	if info != nil && info.Err != "" {
		u.step.Info = merge(u.step.Info, &engine.Info{Err: info.Err})
	}
	r.end(u, status)
	r.forget(id)
}

func (r *Recorder) end(n *node, status string) {
	n.step.EndMS, n.step.Status = r.since(), status
	if r.x != nil && r.x.sink != nil {
		r.x.sink.StepEnded(&n.step)
	}
}

// captureInfo applies the content budget to info's text fields.
func (r *Recorder) captureInfo(in *engine.Info) {
	if !r.t.ContentCaptured {
		in.Prompt, in.Reply, in.Arguments, in.Result = "", "", "", ""
		return
	}
	in.Prompt, in.Reply = r.capture(in.Prompt), r.capture(in.Reply)
	in.Arguments, in.Result = r.capture(in.Arguments), r.capture(in.Result)
}

const truncated = "…[truncated: the trace's capture budget is spent]"

// capture keeps s within what is left of the budget.
func (r *Recorder) capture(s string) string {
	// Only with capture, which gives the recorder its x.
	if len(s) <= r.x.budget {
		r.x.budget -= len(s)
		return s
	}
	cut := r.x.budget
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	r.x.budget = 0
	return s[:cut] + truncated
}

// Finish records the run's outcome: status ("completed" or "failed"), its
// error, and the totals the run record has (which count refused replies'
// tokens the steps may not). Later events are ignored; a later Finish
// restates the header only.
func (r *Recorder) Finish(status, errText string, turns int, tokens Tokens) {
	r.finish(-1, status, errText, turns, tokens)
}

// finish is Finish after the run took elapsed, as the book has just read
// it, or (elapsed negative) reading the recorder's clock here.
func (r *Recorder) finish(elapsed time.Duration, status, errText string, turns int, tokens Tokens) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		r.t.Status, r.t.Turns, r.t.Tokens = status, count(turns), tokens
		if errText != "" {
			r.t.Error = errText
		}
		return
	}
	for len(r.units) > 0 {
		u := r.units[len(r.units)-1]
		r.endUnit(u.id, u.node, StatusCancelled, nil)
	}
	r.done = true
	r.t.Status, r.t.Turns, r.t.Tokens = status, count(turns), tokens
	if errText != "" {
		r.t.Error = errText
	}
	if elapsed < 0 {
		elapsed = r.elapsed()
	}
	r.t.DurationMS = elapsed.Milliseconds()
	if r.x != nil && r.x.sink != nil {
		t := r.t.trace()
		r.x.sink.RunEnded(&t)
	}
}

// Snapshot is a copy of the trace so far.
func (r *Recorder) Snapshot() Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.t.trace()
	t.Steps = make([]Step, len(r.kept))
	for i, n := range r.kept {
		t.Steps[i] = n.step
	}
	if !r.done {
		t.DurationMS = r.elapsed().Milliseconds()
	}
	return t
}

// Summary is a run as the status page lists it.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Summary{RunID: r.t.RunID, Prompt: r.t.Prompt, Started: r.t.Started, Status: r.t.Status,
		Turns: int(r.t.Turns), Tokens: r.t.Tokens, Error: r.t.Error, DurationMS: r.t.DurationMS}
	if !r.done {
		s.DurationMS = r.elapsed().Milliseconds()
	}
	return s
}

// Summary is a run's header line.
type Summary struct {
	RunID      string
	Prompt     string
	Started    time.Time
	Status     string
	DurationMS int64
	Turns      int
	Tokens     Tokens
	Error      string
}
