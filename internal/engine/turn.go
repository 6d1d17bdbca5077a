package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/luavm"
)

// scope is the effective tool set of one prose block: what the model is
// shown (specs, by alias) and how each alias dispatches.
type scope struct {
	order []string
	live  map[string]*toolBinding
	local map[string]bool
	specs []gateway.ToolSpec
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func (sc *scope) addLive(tb *toolBinding, description string) {
	params := tb.desc.Parameters
	if len(params) == 0 {
		params = emptySchema
	}
	sc.order = append(sc.order, tb.alias)
	if sc.live == nil {
		sc.live = map[string]*toolBinding{}
	}
	sc.live[tb.alias] = tb
	sc.specs = append(sc.specs, gateway.ToolSpec{Name: tb.alias, Description: description, Parameters: params})
}

// newScope is an empty scope; its maps come with its first tools (most
// prose has none, and its scope is held through the model turn).
func newScope() *scope {
	return &scope{}
}

// h1Scope is the H1 prose scope: the always tools only.
func (u *unit) h1Scope() *scope {
	b := &u.r.bind
	sc := newScope()
	for _, a := range b.always {
		tb := b.tools[a]
		sc.addLive(tb, tb.modelDescription(""))
	}
	return sc
}

func (tb *toolBinding) modelDescription(addOverride string) string {
	switch {
	case addOverride != "":
		return addOverride
	case tb.override != nil:
		return *tb.override
	}
	return tb.desc.Description
}

// sectionScope is always aliases, then this section's tools.add aliases, then
// its local tools (prompt-language §3.4 step 1), after the near-duplicate
// check.
func (u *unit) sectionScope() (*scope, error) {
	b := &u.r.bind
	declared := make([]string, 0, len(b.always)+len(u.added))
	declared = append(declared, b.always...)
	declared = append(declared, u.added...)
	if err := b.checkScope(declared); err != nil {
		return nil, err
	}
	sc := newScope()
	for _, a := range declared {
		sc.addLive(b.tools[a], b.tools[a].modelDescription(u.addOverride[a]))
	}
	for _, l := range u.locals {
		sc.order = append(sc.order, l.alias)
		if sc.local == nil {
			sc.local = map[string]bool{}
		}
		sc.local[l.alias] = true
		sc.specs = append(sc.specs, gateway.ToolSpec{Name: l.alias, Description: l.description, Parameters: l.schema})
	}
	return sc, nil
}

type roundResult struct {
	text   *string
	finish string
}

// loop runs the model rounds of one prose block (prompt-language §3.6): one
// round for a single-shot block, up to the iteration cap for the loop-capable
// one.
func (u *unit) loop(ctx context.Context, mb *modelBinding, sc *scope, text string, singleShot bool) (roundResult, error) {
	r := u.r
	u.conv = append(u.conv, gateway.Message{Role: "user", Content: text})
	rounds := r.cfg.Limits.MaxToolIterations
	if singleShot {
		rounds = 1
	}
	dispatched := 0
	for range rounds {
		comp, err := u.complete(ctx, mb, u.conv, sc.specs)
		if err != nil {
			var ge *gateway.Error
			if errors.As(err, &ge) && ge.Kind == gateway.KindEmptyReply && ge.FinishReason == "stop" && dispatched > 0 {
				// A model that answers a tool result with an empty stop
				// has nothing to add: a clean end with an empty reply.
				var info *Info
				if r.tracingTurns() {
					info = u.completionInfo(mb, "", "stop", nil, ge.Usage)
				}
				u.turnCompleted(ge.RequestJSON, ge.ResponseJSON, "stop", "", ge.Usage, info)
				empty := ""
				return roundResult{text: &empty, finish: "stop"}, nil
			}
			return roundResult{}, u.turnFailed(ctx, err)
		}
		u.completed(mb, comp)
		if len(comp.ToolCalls) == 0 {
			if comp.FinishReason == "length" {
				u.observe(ModelTurnTruncated)
			}
			t := comp.Text
			return roundResult{text: &t, finish: comp.FinishReason}, nil
		}
		results := make([]string, len(comp.ToolCalls))
		for i, call := range comp.ToolCalls {
			out, err := u.dispatch(ctx, sc, call)
			if err != nil {
				return roundResult{}, err
			}
			results[i] = out
			dispatched++
		}
		u.conv = append(u.conv, gateway.EchoToolResults(mb.model.Dialect, comp.ToolCalls, results)...)
		if singleShot {
			return roundResult{finish: comp.FinishReason}, nil
		}
	}
	return roundResult{}, &Error{Kind: KindTool, Err: &loopExhaustedError{rounds: rounds}}
}

// loopExhaustedError is a tool loop that ran out of rounds. It is a typed
// error because fanout treats it as a soft arm result rather than a
// failure (prompt-language §7).
type loopExhaustedError struct{ rounds int }

func (e *loopExhaustedError) Error() string {
	return fmt.Sprintf("tool-call loop did not converge: the model was still calling tools after %d rounds; raise max_tool_iterations or make the prose ask for a final answer", e.rounds)
}

// dispatch runs one tool call the model asked for.
func (u *unit) dispatch(ctx context.Context, sc *scope, call gateway.ToolCall) (string, error) {
	r := u.r
	alias := call.Name
	tb, isLive := sc.live[alias]
	if !isLive && !sc.local[alias] {
		suffix := ""
		if _, declared := r.bind.tools[alias]; declared {
			suffix = " (alias was declared by tools.need but not added to this section's scope)"
		}
		err := &Error{Kind: KindTool, Err: fmt.Errorf("tool %q is not in this section's scope; in-scope aliases: %s%s", alias, quoteIDs(sc.order), suffix)}
		u.callFailed(call, err)
		return "", err
	}
	if u.calls != nil {
		u.calls[alias]++
	}
	var info *Info
	if r.tracing() {
		info = u.callInfo(call)
	}
	u.emit(ToolCallStarted, alias, "", info)
	if !isLive {
		out, err := u.vm.CallLocalTool(alias, call.Arguments)
		if err != nil {
			u.callFailed(call, err)
			if ctx.Err() != nil {
				return "", cancelledBy(ctx)
			}
			var q *luavm.QuotaError
			if errors.As(err, &q) {
				return "", err
			}
			return "", &Error{Kind: KindTool, Err: fmt.Errorf("tool call failure: local tool %q: %w", alias, err)}
		}
		u.callSucceeded(call, out)
		return out, nil
	}
	res, err := tb.tool.Call(ctx, call.Arguments)
	if err != nil {
		u.callFailed(call, err)
		if ctx.Err() != nil {
			return "", cancelledBy(ctx)
		}
		return "", &Error{Kind: KindTool, Err: fmt.Errorf("tool call failure: %w", err)}
	}
	u.callSucceeded(call, res.Text)
	if res.Trusted {
		return res.Text, nil
	}
	return r.guard.Wrap(res.Text), nil
}

func (u *unit) callFailed(call gateway.ToolCall, err error) {
	var info *Info
	if u.r.tracing() {
		info = errInfo(err)
		info.Tool = call.Name
	}
	u.emit(ToolCallFailed, "", "", info)
}

func (u *unit) callSucceeded(call gateway.ToolCall, result string) {
	var info *Info
	if u.r.tracing() {
		info = &Info{Tool: call.Name, ResultBytes: len(result)}
		if u.r.cfg.CaptureContent {
			info.Result = result
		}
	}
	u.emit(ToolCallSucceeded, "", "", info)
}

// complete sends one chat request for mb.
func (u *unit) complete(ctx context.Context, mb *modelBinding, msgs []gateway.Message, specs []gateway.ToolSpec) (*gateway.Completion, error) {
	c := u.r.cfg.Client
	req := gateway.ChatRequest{
		Model:       mb.model.ID,
		Dialect:     mb.model.Dialect,
		Messages:    msgs,
		Tools:       specs,
		Temperature: mb.opts.Temperature,
		MaxTokens:   mb.opts.MaxTokens,
		Thinking:    mb.opts.Thinking,
		// The bound model's own switch, if prompts.toml names one.
		ThinkingSwitch: mb.model.ThinkingSwitch,
	}
	var info *Info
	if u.r.tracing() {
		info = u.turnInfo(&req)
	}
	u.emit(ModelTurnStarted, mb.alias+", "+mb.model.ID, "", info)
	return c.Complete(ctx, req)
}

// completed reports comp, a turn of mb that returned a completion.
func (u *unit) completed(mb *modelBinding, comp *gateway.Completion) {
	var info *Info
	if u.r.tracingTurns() {
		info = u.completionInfo(mb, comp.Text, comp.FinishReason, comp.ToolCalls, comp.Usage)
	}
	u.turnCompleted(comp.RequestJSON, comp.ResponseJSON, comp.FinishReason, comp.Reasoning, comp.Usage, info)
}

func (u *unit) turnCompleted(req, resp []byte, finish, reasoning string, usage gateway.Usage, info *Info) {
	n := u.r.turns.Add(1)
	u.r.spend(usage)
	if u.r.cfg.Debug != nil {
		u.r.debug(DebugTurn{Execution: u.r.cfg.Execution, Section: u.name, Turn: int(n),
			Request: req, Response: resp, FinishReason: finish, Reasoning: reasoning})
	}
	if info != nil {
		info.PromptBytes = len(req)
	}
	u.emit(ModelTurnCompleted, "", "", info)
}

// turnFailed reports a failed model round made under ctx; a cancelled one
// is not a model failure and is not reported as one. A reply the gateway
// refused still cost what it reports, so its usage is counted.
func (u *unit) turnFailed(ctx context.Context, err error) error {
	var ge *gateway.Error
	if errors.As(err, &ge) {
		u.r.spend(ge.Usage)
	}
	if ctx.Err() != nil {
		return cancelledBy(ctx)
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var info *Info
	if u.r.tracingTurns() {
		info = errInfo(err)
		if ge != nil {
			info.ErrKind = ge.Kind.String()
		}
	}
	u.emit(ModelTurnFailed, "", "", info)
	return classify(err)
}

// infer is one tool-free round in a fresh conversation (models.infer and
// handle:infer). It counts as a turn and never touches reply or sys.
func (u *unit) infer(ctx context.Context, mb *modelBinding, p string) (string, error) {
	comp, err := u.complete(ctx, mb, []gateway.Message{{Role: "user", Content: p}}, nil)
	if err != nil {
		return "", u.turnFailed(ctx, err)
	}
	u.completed(mb, comp)
	if len(comp.ToolCalls) > 0 {
		return "", &Error{Kind: KindCompletion, Err: errors.New("model inference received tool calls but no tools were advertised")}
	}
	return comp.Text, nil
}
