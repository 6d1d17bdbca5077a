package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// run is the state of one Run call. Every run in flight holds one for its
// whole wait at the gateway, so it is kept within 696 bytes: with the
// allocator's 8-byte type header, the 704-byte size class
// (TestRunFitsASmallSizeClass).
type run struct {
	p     *prompt.Prompt
	args  string
	store *store.Store
	// cfg is the host's Options with its defaults applied: its
	// Execution and Now are set, its Limits.Limits are the VMs'
	// (WithDefaults) and its Limits.MaxToolIterations is the prompt's
	// (the frontmatter's, else the host's, else the default).
	cfg    Options
	guard  *luavm.Guard
	memory *luavm.Memory // the run's memory ceiling, shared by all its VMs
	turns  atomic.Int64  // completed model turns, fanout arms' included
	ids    atomic.Int64  // the last sys.id handed to a section entry
	units  atomic.Uint32 // the last unit id (TraceEvent.Unit)
	// modelsRetried is set once a binding miss swapped models (see
	// below); here, next to units, where it fills what would be padding.
	modelsRetried bool
	walkAt        string // sys.when of the sections: when the walk started

	// promptTokens and completionTokens sum the usage every model reply
	// reported, fanout arms' and refused replies' included.
	promptTokens, completionTokens atomic.Int64

	// debugMu serialises Options.Debug calls: fanout arms complete turns
	// concurrently, and hosts should not have to care.
	debugMu sync.Mutex

	bind bindings

	// models is the model list the run binds against: the snapshot taken
	// at its start, swapped at most once by a binding miss (see
	// bindings.refreshModels). Only the H1 pass reads or writes it.
	models modelset.Snapshot
	// probed, set only by Probe, collects every need the H1 declares.
	probed *[]ProbedNeed
}

// Run executes a parsed prompt with args over st (nil: a fresh store). It
// returns the run's value, or an [*Error]; [Result.Turns] and
// [Result.Tokens] are set either way.
// No goroutine started by Run outlives it.
func Run(ctx context.Context, p *prompt.Prompt, args string, st *store.Store, cfg Options) (Result, error) {
	if p == nil {
		return Result{}, &Error{Kind: KindInternal, Err: errors.New("engine.Run was given no prompt")}
	}
	// The version gate comes first and reports nothing.
	if !p.Frontmatter.HasVersion {
		return Result{}, &Error{Kind: KindParse, Err: errors.New("not a promptforge prompt: no promptforge version")}
	}
	if v := p.Frontmatter.Version; v != 1 {
		return Result{}, &Error{Kind: KindVersion, Err: fmt.Errorf("unsupported promptforge version: %d (this build supports major 1)", v)}
	}
	r, err := newRun(p, args, st, cfg)
	if err != nil {
		return Result{}, err
	}

	r.observe(p.Title, RunStarted, nil)
	value, err := r.execute(ctx)
	if err != nil {
		err = finalError(ctx, err)
		var info *Info
		if r.tracing() {
			info = errInfo(err)
		}
		r.observe(p.Title, RunFailed, info)
		return Result{Turns: int(r.turns.Load()), Tokens: r.tokens()}, err
	}
	r.observe(p.Title, RunSucceeded, nil)
	return Result{Value: value, Turns: int(r.turns.Load()), Tokens: r.tokens()}, nil
}

// newRun prepares the state of one run: defaults, limits, the guard nonce
// and the checked tool registry.
func newRun(p *prompt.Prompt, args string, st *store.Store, cfg Options) (*run, error) {
	r := &run{p: p, args: args, store: st, cfg: cfg}
	if r.store == nil {
		r.store = store.New()
	}
	if r.cfg.Now == nil {
		r.cfg.Now = time.Now
	}
	if r.cfg.Execution == "" {
		r.cfg.Execution = mintExecution()
	}
	if r.cfg.Client == nil {
		r.cfg.Client = gateway.NewDisabled(noClientReason)
	}
	r.cfg.Limits.Limits = cfg.Limits.Limits.WithDefaults()
	r.memory = luavm.NewMemory(r.cfg.Limits.MaxRunMemory)
	def := cfg.Limits.MaxToolIterations
	if def <= 0 {
		def = DefaultMaxToolIterations
	}
	r.cfg.Limits.MaxToolIterations = p.Frontmatter.ResolveMaxToolIterations(def)

	guard, err := luavm.NewGuard()
	if err != nil {
		return nil, &Error{Kind: KindInternal, Err: err}
	}
	r.guard = guard
	if err := validateTools(cfg.Tools); err != nil {
		return nil, err
	}
	r.bind.init(r)
	r.models = modelset.Fixed(cfg.Models)
	if cfg.ModelSet != nil {
		r.models = cfg.ModelSet.Snapshot()
	}

	return r, nil
}

func mintExecution() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("run-%d", time.Now().UnixNano())
	}
	return "run-" + hex.EncodeToString(b[:])
}

// validateTools checks the live registry: unique identities and wire names
// a model can be shown.
func validateTools(ts []tools.Tool) error {
	seen := make(map[tools.ID]bool, len(ts))
	for _, t := range ts {
		d := t.Descriptor()
		for _, part := range []string{d.ID.Server, d.ID.Name, d.WireName} {
			if part == "" || strings.ContainsRune(part, '/') || strings.ContainsFunc(part, unicode.IsControl) {
				return &Error{Kind: KindInternal, Err: fmt.Errorf("live tool %q has an invalid identity or wire name: each must be non-empty, without '/' or control characters", d.ID)}
			}
		}
		if seen[d.ID] {
			return &Error{Kind: KindInternal, Err: fmt.Errorf("live tool %q is registered twice; tool identities must be unique", d.ID)}
		}
		seen[d.ID] = true
	}
	return nil
}

// observe reports a run-level event (the run starting and ending); info
// goes to the tracer only, which gets only the failure (see traced).
func (r *run) observe(section string, d Detail, info *Info) {
	ev := Event{Execution: r.cfg.Execution, Section: section, Detail: d}
	if r.cfg.Observer != nil {
		r.cfg.Observer.Observe(ev)
	}
	if traced[d] && r.tracing() {
		r.cfg.Tracer.Observe(TraceEvent{Event: ev, Info: info})
	}
}

func (r *run) debug(t DebugTurn) {
	r.debugMu.Lock()
	defer r.debugMu.Unlock()
	r.cfg.Debug(t)
}

// spend adds one reply's usage to the run's; fanout arms call it
// concurrently.
func (r *run) spend(u gateway.Usage) {
	r.promptTokens.Add(int64(u.PromptTokens))
	r.completionTokens.Add(int64(u.CompletionTokens))
}

// tokens is the usage summed so far.
func (r *run) tokens() gateway.Usage {
	return gateway.Usage{PromptTokens: int(r.promptTokens.Load()), CompletionTokens: int(r.completionTokens.Load())}
}

// now is the run's clock (Options.Now).
func (r *run) now() time.Time { return r.cfg.Now() }

func (r *run) timestamp() string { return r.now().UTC().Format(time.RFC3339) }

// execute is the H1 pass then the top-level walk (prompt-language §3.1 steps
// 4–6).
func (r *run) execute(ctx context.Context) (string, error) {
	if ctx.Err() != nil {
		return "", cancelledBy(ctx)
	}
	top := frame{args: r.args}
	h1 := r.newUnit(top, place{}, ViaH1)
	end, v, err := h1.runH1(ctx)
	if err != nil {
		return "", err
	}
	if end.returned {
		return end.value, nil
	}
	if len(r.p.Sections) == 0 {
		if end.reply != nil {
			return *end.reply, nil
		}
		return "done", nil
	}
	if err := r.bind.analyseNearDuplicates(ctx); err != nil {
		return "", err
	}
	r.walkAt = r.timestamp()
	end, err = r.walk(ctx, top, place{slice: r.p.Sections}, entry{v: v})
	if err != nil {
		return "", err
	}
	if end.returned {
		return end.value, nil
	}
	if end.reply != nil {
		return *end.reply, nil
	}
	return "done", nil
}

// finalError classifies whatever ended the run under ctx. Cancellation
// wins: once the context is done, every other failure is a consequence of
// it, and the error names the host's cause.
func finalError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cancelledBy(ctx)
	}
	return classify(err)
}

// classify maps any error to an *Error with the right kind.
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var (
		le *luavm.LuaError
		qe *luavm.QuotaError
		ce *luavm.CancelledError
		se *luavm.ScriptError
		te *prompt.TemplateError
		ge *gateway.Error
	)
	switch {
	case errors.As(err, &ce):
		return &Error{Kind: KindCancelled, Err: err}
	case errors.As(err, &qe):
		return &Error{Kind: KindQuota, Err: err}
	case errors.As(err, &te):
		return &Error{Kind: KindSubstitution, Err: err}
	case errors.As(err, &ge):
		if ge.Kind == gateway.KindCancelled {
			return &Error{Kind: KindCancelled, Err: err}
		}
		return &Error{Kind: KindCompletion, Err: err}
	case errors.As(err, &le), errors.As(err, &se):
		return &Error{Kind: KindLua, Err: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: KindCancelled, Err: err}
	}
	return &Error{Kind: KindInternal, Err: err}
}

// speculationStopped is how the engine itself stops a speculative attempt
// (before a model turn, or at a section past its time); its VMs stop with
// the same cause (luavm.CancelledError).
func speculationStopped() error {
	return &Error{Kind: KindCancelled, Err: &luavm.CancelledError{Cause: ErrSpeculationStopped}}
}

// speculationOver reports whether the run is a speculative attempt whose
// time is up. Each section reads the clock: a jump loop of sections that
// run few instructions each might never reach the meter's next check.
func (r *run) speculationOver() bool {
	until := r.cfg.SpeculateUntil
	return !until.IsZero() && !time.Now().Before(until)
}

// noClientReason is what a model call says when the host passed no
// gateway client. The engine never reads the process environment for
// one: the host decides where the gateway is (prompts.toml for serve, the
// environment for the run command) and passes a client, or a disabled one
// that says what to set.
const noClientReason = "the host passed no gateway client: set [gateway] in prompts.toml, or " +
	gateway.EnvURL + " and " + gateway.EnvAPIKey + " for the run command"
