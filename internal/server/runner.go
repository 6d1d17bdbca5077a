package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/humantime"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/runtrace"
	"github.com/promptforge-go/promptforge/internal/store"
)

// msgDuplicateRun is the failed-run message the reference pins
// (mcp-server appendix A); the undeclared-input one is
// [engine.ErrInputUndeclared]'s.
const msgDuplicateRun = "the run id was already in use"

// msgShuttingDown is the refusal of a call that arrives once shutdown has
// begun, whether admission or launch noticed it first.
const msgShuttingDown = "the server is shutting down and starts no new runs; retry once it is back"

// runRequest is a checked run_prompt call.
type runRequest struct {
	name          string
	call          callArgs
	bound         prompt.Bound // set once the prompt is known (start)
	inputText     string
	input, output *confinedPath // nil when not given
	inputGiven    bool
	// outputFile is output_file as spelt; it is confined only once the
	// prompt is known to declare an output, since otherwise it is ignored.
	outputFile string
}

func (s *Server) parseRun(ctx context.Context, raw []byte) (runRequest, error) {
	a, err := parseArguments(ToolRunPrompt, raw, runPromptKeys)
	if err != nil {
		return runRequest{}, err
	}
	var r runRequest
	if r.name, err = a.required("prompt"); err != nil {
		return r, err
	}
	if r.call.typed, err = a.object("arguments"); err != nil {
		return r, err
	}
	_, r.call.rawGiven = a.get("args")
	// One statement per key, not a loop over pointers to the fields: the
	// pointers made the request and inFile escape, two allocations of
	// every run_prompt call (issue #12). The order is the errors' order.
	if r.call.raw, err = a.optional("args"); err != nil {
		return r, err
	}
	inFile, err := a.optional("input_file")
	if err != nil {
		return r, err
	}
	if r.inputText, err = a.optional("input_text"); err != nil {
		return r, err
	}
	if r.outputFile, err = a.optional("output_file"); err != nil {
		return r, err
	}
	if inFile != "" && r.inputText != "" {
		return r, invalidParams("input_file and input_text are mutually exclusive; specify one, not both")
	}
	r.inputGiven = inFile != "" || r.inputText != ""
	if inFile != "" {
		handOnRead(ctx) // files.check reads the file system
		pl, err := s.files.check("input_file", inFile, false)
		if err != nil {
			return r, err
		}
		r.input = &pl
	}
	return r, nil
}

// refusal is a run_prompt call the server declines without running
// anything: a path outside the roots, a prompt that does not exist, no
// slot in time, a shutdown. The caller gets its text as an isError result
// a model can act on, not as a protocol error; runPrompt renders every
// refusal that way, in one place.
type refusal interface {
	error
	refusal()
}

// refused is a refusal worded where it is decided.
type refused string

func (r refused) Error() string { return string(r) }
func (refused) refusal()        {}

func (s *Server) runPrompt(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	r, err := s.parseRun(ctx, req.Params.Arguments)
	if err != nil {
		// A path outside the roots is a refusal; a malformed call is not.
		return toolRefusal(err)
	}
	// One generation for the whole call: the entry found here is the one
	// that runs, whatever reloads happen meanwhile.
	entry, err := s.lookup(r.name)
	if err != nil {
		return toolRefusal(err)
	}
	return s.callRun(ctx, req, entry, r)
}

// callRun is how a tools/call runs a prompt and answers, for run_prompt
// and every prompt tool alike: start the run, settle it against the reply
// deadline, and render the record (or the refusal). Long-run handling that
// differs by client (a task instead of the running text) belongs here, so
// both surfaces get it.
func (s *Server) callRun(ctx context.Context, req *mcp.CallToolRequest, entry catalog.Entry, r runRequest) (*mcp.CallToolResult, error) {
	res, err := s.start(ctx, req.Session, req.Params.GetProgressToken(), entry, r)
	if err != nil {
		return toolRefusal(err)
	}
	return s.answerRun(ctx, req, res, runResult)
}

// toolRefusal renders a refusal as the isError text a model can act on;
// any other error stays a protocol error.
func toolRefusal(err error) (*mcp.CallToolResult, error) {
	var no refusal
	if errors.As(err, &no) {
		return textResult(no.Error()), nil
	}
	return nil, err
}

// lookup finds a prompt in the current generation; an unknown name is a
// refusal that suggests the closest one.
func (s *Server) lookup(name string) (catalog.Entry, error) {
	entry, err := s.catalog.Current().Catalog().Lookup(name)
	if err != nil {
		var le *catalog.LookupError
		if errors.As(err, &le) && errors.Is(err, catalog.ErrNotFound) {
			return catalog.Entry{}, refused(le.Error())
		}
		return catalog.Entry{}, internalError("%v", err)
	}
	return entry, nil
}

// start runs one checked request for entry, from whichever surface
// (run_prompt, a prompt tool, prompts/get), through the one path:
// argument binding, admission, launch and the reply deadline. session and
// token carry the caller's progress; session may be nil. A refusal means
// no run was started; any other error is a protocol error.
func (s *Server) start(ctx context.Context, session *mcp.ServerSession, token any, entry catalog.Entry, r runRequest) (runs.Result, error) {
	var err error
	if entry.Broken() {
		// Never registered: there is nothing to collect later.
		return runs.Failed(runs.NewRunID(), entry.Name(), entry.Problem(), 0, 0), nil
	}
	if r.bound, err = bindArguments(entry.Name(), entry.Prompt().Frontmatter.Arguments, r.call); err != nil {
		return runs.Result{}, err
	}
	if r.outputFile != "" && entry.Prompt().Frontmatter.Output != nil {
		handOnRead(ctx) // files.check reads the file system
		pl, err := s.files.check("output_file", r.outputFile, true)
		if err != nil {
			return runs.Result{}, err
		}
		r.output = &pl
	}

	var notify notifyFunc
	if session != nil && token != nil {
		// Only a call with a progress token notifies: the method value
		// is an allocation newProgress would drop at once.
		notify = session.NotifyProgress
	}
	obs := newProgress(ctx, token, notify)
	if obs != nil {
		// The pump writes the notifications from a goroutine of its
		// own and obs.finish waits for it: its write may block (a
		// peer that reads stdout only once its calls are written),
		// and so may this call, which then must not hold the
		// reading of stdin (transport.DirectCall.Wait). Such a run is
		// not attempted inline anyway (speculate).
		handOnRead(ctx)
	}
	res, err := s.launch(ctx, entry, r, obs)
	dropped, disconnected := obs.finish()
	s.metrics.framesDropped(dropFull, dropped)
	s.metrics.framesDropped(dropDisconnected, disconnected)
	return res, err
}

// launch admits, launches and settles one run. A refusal means no run was
// started.
func (s *Server) launch(ctx context.Context, entry catalog.Entry, r runRequest, obs *progress) (runs.Result, error) {
	wait, inline := ctx.Value(inlineCallKey{}).(func())
	if inline {
		ctx = runs.WithBeforeWait(ctx, wait)
	}
	slot, err := s.runs.Admit(ctx)
	if err != nil {
		return runs.Result{}, admitRefusal(err)
	}
	id := runs.NewRunID()
	// With traces on, the run's trace is opened here, so that the
	// registry keeps it with the run's record (see traces.go); the
	// metrics' tracer (tokens by model, gateway errors) gets the ends of
	// model turns through it.
	next := metricsTracer{s.metrics}
	trace := s.traces.Open(id, entry.Name(), next)
	var local any // nil, not a nil *Recorder, with traces off
	if trace != nil {
		local = trace
	}
	// The record starts when the trace does, read once (zero with traces
	// off: the registry reads it).
	body := &runBody{s: s, id: id, p: entry.Prompt(), r: r, obs: obs, trace: trace, next: next}
	var h *runs.Handle
	if inline && s.speculate(r, obs, trace) {
		h, err = s.runs.LaunchInline(slot, id, entry.Name(), trace.Started(), local, body.run, body.attempt)
	} else {
		h, err = s.runs.LaunchWith(slot, id, entry.Name(), trace.Started(), local, body.run)
	}
	switch {
	case errors.Is(err, runs.ErrDuplicateRun):
		return runs.Failed(id, entry.Name(), msgDuplicateRun, 0, 0), nil
	case errors.Is(err, runs.ErrClosed):
		return runs.Result{}, refused(msgShuttingDown)
	case errors.Is(err, runs.ErrGlobalCap):
		return runs.Result{}, refused("every run slot across the replicas is busy ([runs].global_max_runs); retry in a moment")
	case err != nil:
		// The run store did not take the running record: no run exists
		// (check_run would not know the id, and no metric or trace counts
		// it), so this is a refusal, as mcp-server §5.4 says.
		// The store's own words, without Launch's "launch run <id>": that
		// id names nothing.
		why := err
		if inner := errors.Unwrap(err); inner != nil {
			why = inner
		}
		return runs.Result{}, refused(fmt.Sprintf("the run store did not record the run, so nothing was run (%v); retry in a moment", why))
	}
	return s.runs.Settle(ctx, h), nil
}

// admitRefusal words the refusal of a call Admit found no slot for. It is
// apart from launch so that the target errors.As needs is made only on a
// refusal, not on every call (issue #12).
func admitRefusal(err error) error {
	var busy *runs.RefusedError
	switch {
	case errors.As(err, &busy):
		return refused(fmt.Sprintf("every run slot is busy and none came free within %s; retry in a moment", humantime.Format(busy.Wait)))
	case errors.Is(err, runs.ErrClosed):
		return refused(msgShuttingDown)
	default:
		return refused("the call ended before a run slot came free, so nothing was run")
	}
}

// inlineCallKey is the context key of a call whose caller waits for its
// reply on the goroutine the call runs on, and keeps reading its
// transport there only while the call cannot wait (the stdio fast lane:
// transport.DirectCall.Wait, which the value is). AnswerCall sets it.
type inlineCallKey struct{}

// handOnRead tells an inline call's caller (inlineCallKey) that the call
// is about to do something that may wait, so that the caller reads its
// transport on from another goroutine meanwhile; for any other call it
// does nothing. Backend.LazyRead promises that nothing waits before it:
// a file system call may (a network file system), and so may a progress
// pump's write.
func handOnRead(ctx context.Context) {
	if wait, ok := ctx.Value(inlineCallKey{}).(func()); ok {
		wait()
	}
}

// speculationWindow bounds a speculative attempt (runBody.attempt): the
// Lua time it may take before it stops and the run is started again on a
// run goroutine. It is what an inline call may hold up the reading of
// stdin (a notifications/cancelled, the next request), and what an
// attempt that stops wastes, give or take the Lua between two clock
// checks; one long library call the checks do not see into (a big
// string.rep) overruns it by its own time (docs/benchmarks.md, "What an
// attempt costs when it stops"). A Lua-only prompt's run takes tens of
// microseconds.
const speculationWindow = time.Millisecond

// speculate reports whether run r, launched for an inline call, is
// first attempted on the caller's goroutine: only without a progress
// token (whose notifications go out from a goroutine of their own),
// without an input_file or output_file (only regular files are taken,
// but one on a network file system may keep a read or write waiting), with a
// trace that can be rewound should the attempt stop, and with a reply
// deadline longer than the attempt (a shorter one must answer running,
// mcp-server §5.1, which a run finished inline would not).
func (s *Server) speculate(r runRequest, obs *progress, trace *runtrace.Recorder) bool {
	return obs == nil && r.input == nil && r.output == nil && trace.Rewindable() && s.runs.ReplyDeadline() > speculationWindow
}

// runBody is the body of one run: seed the store, execute the prompt the
// catalog parsed, and apply the declared-output rules to the value. With
// traces on it is the one owner of the run's trace: it opens it and closes
// it with the outcome the record will have (mcp-server §4.7), before the
// record is terminal, so a caller that collects the record finds the trace
// ended.
type runBody struct {
	s     *Server
	id    string
	p     *prompt.Prompt
	r     runRequest
	obs   *progress
	trace *runtrace.Recorder
	next  engine.Tracer
}

// run is the run on a run goroutine (runs.Registry.LaunchWith).
func (b *runBody) run(ctx context.Context) runs.Outcome {
	out, _ := b.execute(ctx, time.Time{})
	return out
}

// attempt is the run's speculative attempt on the caller's goroutine
// (runs.Registry.LaunchInline): the engine stops it before anything that
// waits on the host or reaches outside the run (a model turn, a tool, a
// fanout) and once its Lua has run past speculationWindow. An attempt
// that stops reports false, with nothing of it left: its narration is
// dropped unsaid and its trace rewound, and the registry runs the prompt
// again with run.
func (b *runBody) attempt(ctx context.Context) (runs.Outcome, bool) {
	return b.execute(ctx, time.Now().Add(speculationWindow))
}

// execute runs the body, as a speculative attempt when until is set; it
// reports false when the attempt stopped (and the run is to be run again).
func (b *runBody) execute(ctx context.Context, until time.Time) (runs.Outcome, bool) {
	s, p, r, obs, trace := b.s, b.p, b.r, b.obs, b.trace
	opts := engine.Options{
		Execution: b.id,
		Limits:    s.limits,
		Params:    r.bound.Params,
		Client:    s.client,
		ModelSet:  s.models,
		Tools:     s.tools,
		Ranking:   s.ranking,
		// Runs of the same prompts against the same model list bind
		// their models alike: ranked once, not per run.
		ModelPicks:     s.picks,
		SpeculateUntil: until,
	}
	if obs != nil {
		opts.Observer = engine.Observers(s.observer, obs)
	} else {
		// No progress token: the narration alone (a nil *progress in
		// the list would be a non-nil Observer).
		opts.Observer = engine.Observers(s.observer)
	}
	// An attempt's narration is told once it is known to be the run's:
	// an attempt that stops has not happened.
	var told *heldNarration
	if !until.IsZero() {
		told = s.holdNarration(opts.Observer)
		opts.Observer = told
		defer s.releaseNarration(told)
	}
	s.traces.Enter(trace, b.next, &opts)
	ended := false
	if trace != nil || told != nil {
		defer func() {
			if !ended {
				// The body panicked or exited: the record says so
				// (runs.AbnormalText), and so does the trace.
				v := recover()
				told.tell()
				s.traces.End(trace, string(runs.StatusFailed), runs.AbnormalText(v), 0, runtrace.Tokens{})
				if v != nil {
					panic(v) // on to the registry, which records it
				}
			}
		}()
	}
	st := store.New()
	if err := seedStore(st, p, r); err != nil {
		ended = true
		told.tell()
		at := s.traces.End(trace, string(runs.StatusFailed), runs.FailureText(ctx, err), 0, runtrace.Tokens{})
		return runs.Outcome{Err: err, Ended: at}, true
	}
	res, err := engine.Run(ctx, p, r.bound.Args, st, opts)
	if told != nil && errors.Is(err, engine.ErrSpeculationStopped) {
		ended = true
		trace.Rewind()
		return runs.Outcome{}, false
	}
	told.tell()
	// The engine counts the turns and sums the tokens, failed runs
	// included; nothing here counts them again.
	turns, tokens := uint32(res.Turns), runTokens(res.Tokens)
	traceTokens := traceTokensOf(tokens)
	if err != nil {
		ended = true
		at := s.traces.End(trace, string(runs.StatusFailed), runs.FailureText(ctx, err), int(turns), traceTokens)
		return runs.Outcome{Err: err, Turns: turns, Tokens: tokens, Ended: at}, true
	}
	// The trace ends after the declared output is written, which
	// the record's time counts too, so that a panic there is the
	// deferred end's, as it is the record's.
	value := extractOutput(st, p, res.Value, r)
	ended = true
	// The record ends when the trace does (zero with traces off:
	// the registry reads it).
	at := s.traces.End(trace, string(runs.StatusCompleted), "", int(turns), traceTokens)
	return runs.Outcome{Value: value, Turns: turns, Tokens: tokens, Ended: at}, true
}

// heldNarration keeps a speculative attempt's observations until the
// attempt is known to be the run (tell), so that one that stops, and the
// run started again after it, narrate the run once. The engine calls
// Observe from the attempt's goroutine only: an attempt stops at a
// fanout, before its arms start.
type heldNarration struct {
	to   engine.Observer
	held []engine.Event
}

func (h *heldNarration) Observe(ev engine.Event) { h.held = append(h.held, ev) }

// tell hands the held observations on, in order; nil is a no-op.
func (h *heldNarration) tell() {
	if h == nil {
		return
	}
	for _, ev := range h.held {
		h.to.Observe(ev)
	}
	h.held = h.held[:0]
}

// maxHeldKept bounds the observations a pooled heldNarration keeps room
// for: a Lua-only run makes about a dozen, and one that logged hundreds
// of lines should not leave its buffer behind.
const maxHeldKept = 64

// holdNarration is a heldNarration for an attempt that narrates to to:
// reused, since holding a run's dozen observations grew a new slice
// several times a call (2.3 KB a run_prompt, issue #12).
func (s *Server) holdNarration(to engine.Observer) *heldNarration {
	h, _ := s.narrations.Get().(*heldNarration)
	if h == nil {
		h = &heldNarration{}
	}
	h.to = to
	return h
}

// releaseNarration keeps h for the next attempt, holding nothing of this
// one's.
func (s *Server) releaseNarration(h *heldNarration) {
	if cap(h.held) > maxHeldKept {
		return
	}
	clear(h.held[:cap(h.held)])
	h.held, h.to = h.held[:0], nil
	s.narrations.Put(h)
}

// runTokens is the engine's token usage as the registry records it. The
// gateway reads no negative count; the clamp keeps that true here too.
func runTokens(u gateway.Usage) runs.Tokens {
	return runs.Tokens{Prompt: uint64(max(u.PromptTokens, 0)), Completion: uint64(max(u.CompletionTokens, 0))}
}

// seedStore places the caller's input at the prompt's declared input
// path. A prompt that declares input but gets none runs with an empty
// store, as the reference does: it fails only if it reads the file.
func seedStore(st *store.Store, p *prompt.Prompt, r runRequest) error {
	if !r.inputGiven {
		return nil
	}
	return engine.SeedDeclaredInput(st, p, func() (string, error) {
		if r.input == nil {
			return r.inputText, nil
		}
		text, err := r.input.read()
		if err != nil {
			return "", fmt.Errorf("cannot read input_file %s: %w", strconv.Quote(r.input.caller), err)
		}
		return text, nil
	})
}

// extractOutput applies mcp-server §5.1, run body step 3, to a completed
// run's value.
func extractOutput(st *store.Store, p *prompt.Prompt, value string, r runRequest) string {
	out, err := engine.ExtractDeclaredOutput(st, p)
	switch {
	case out.Path == "":
		// output_file without a declared output has nothing to write.
		return value
	case err != nil || !out.Produced:
		return value + "\n\n[note: the prompt declares output " + strconv.Quote(out.Path) + " but it was not produced]"
	case r.output == nil:
		return out.Content
	}
	if err := r.output.write(out.Content); err != nil {
		return value + "\n\n[note: could not write output to " + strconv.Quote(r.outputFile) + ": " + err.Error() + "]"
	}
	return value
}
