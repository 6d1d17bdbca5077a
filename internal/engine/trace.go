package engine

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/promptforge-go/promptforge/internal/gateway"
)

// This file is what a tracer sees beyond an Observer: where each event sits
// in the run's structure and what a model turn or tool call measured. It is
// built only when Options.Tracer is set, so a run nobody traces pays one nil
// check per event and nothing else.

// Via is how an execution unit was entered: the H1 pass, the walk moving on,
// a jump, an execute chain or a fanout arm (prompt-language §2.10, §3.3, §7).
type Via uint8

const (
	// ViaRun marks run-level events (RunStarted, RunSucceeded,
	// RunFailed), which belong to no unit; a tracer gets only RunFailed.
	ViaRun Via = iota
	ViaH1
	ViaWalk
	ViaJump
	ViaExecute
	ViaFanout
)

var viaNames = [...]string{ViaRun: "run", ViaH1: "h1", ViaWalk: "walk", ViaJump: "jump", ViaExecute: "execute", ViaFanout: "fanout"}

func (v Via) String() string {
	if int(v) < len(viaNames) {
		return viaNames[v]
	}
	return "via?"
}

// SectionFailed is a section entry that ended with an error. It is reported
// to Options.Tracer only (the Observer vocabulary, prompt-language §3.11, is
// unchanged): a tracer needs every unit to end, and a failing section has no
// SectionFinished.
const SectionFailed Detail = DetailLua + 1

// TraceEvent is an Event as Options.Tracer receives it: the event, where it
// sits, and for model turns, tool calls and arms what they measured. A
// tracer gets the run's failure, the H1's events (but its teardown's
// start, see h1Traced), and from sections and arms their start and end,
// turns, tool calls and log lines (see traced).
type TraceEvent struct {
	Event
	// Unit identifies the execution unit the event belongs to (1 for the
	// H1, then in the order units start); 0 for run-level events.
	Unit uint32
	// Parent is the unit that started Unit's chain: the caller of an
	// execute or a fanout, the arm for a chain a fanout arm jumps into;
	// 0 for the H1 and the top-level walk.
	Parent uint32
	// Via is how Unit was entered.
	Via Via
	// Info is set on ModelTurnStarted/Completed/Failed,
	// ToolCallStarted/Succeeded/Failed, FanoutArmStarted, SectionFailed
	// and RunFailed; nil otherwise.
	Info *Info
}

// Info is what a traced step measured. Sizes are bytes. The text fields
// (Prompt, Reply, Arguments, Result) are set only with
// Options.CaptureContent; the rest never carries what an author or a
// model wrote beyond names (model ids, tool aliases, argument keys).
type Info struct {
	Model       string        `json:"model,omitempty"`        // the model id (turns)
	PromptBytes int           `json:"prompt_bytes,omitempty"` // the chat request body (turns)
	ReplyBytes  int           `json:"reply_bytes,omitempty"`  // the reply's text (turns)
	Usage       gateway.Usage `json:"-"`
	Finish      string        `json:"finish,omitempty"`     // the finish reason (turns)
	ToolCalls   []string      `json:"tool_calls,omitempty"` // the tools a turn asked for, by alias
	Tool        string        `json:"tool,omitempty"`       // the alias (tool calls)
	ArgKeys     []string      `json:"arg_keys,omitempty"`   // the call's top-level argument keys, sorted
	ArgBytes    int           `json:"arg_bytes,omitempty"`
	ResultBytes int           `json:"result_bytes,omitempty"`
	Index       int           `json:"index,omitempty"` // an arm's 1-based position
	Of          int           `json:"of,omitempty"`    // how many arms its fanout has
	Err         string        `json:"error,omitempty"`
	// ErrKind is a failed turn's gateway error kind ("transport",
	// "status", "malformed", "empty reply", ...); "" for other failures.
	ErrKind string `json:"error_kind,omitempty"`
	// Content, only with Options.CaptureContent.
	Prompt    string `json:"prompt,omitempty"` // the last user message of the turn
	Reply     string `json:"reply,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Result    string `json:"result,omitempty"`
}

// trace hands ev to the tracer; info is built by the caller only when
// tracing() (tracingTurns(), for a turn's end) is true.
func (u *unit) trace(ev Event, info *Info) {
	u.r.cfg.Tracer.Observe(TraceEvent{Event: ev, Unit: u.id, Parent: u.parent, Via: u.via, Info: info})
}

// tracing is whether the tracer gets the whole trace; tracingTurns whether
// it gets at least the ends of model turns (Options.TraceTurnsOnly).
func (r *run) tracing() bool      { return r.cfg.Tracer != nil && !r.cfg.TraceTurnsOnly }
func (r *run) tracingTurns() bool { return r.cfg.Tracer != nil }

// emit reports d: to the observer unless the unit is inside a fanout arm and
// d is not forwarded from arms (see armForwarded), and to the tracer always
// (only the ends of turns with Options.TraceTurnsOnly).
func (u *unit) emit(d Detail, subject, message string, info *Info) {
	r := u.r
	ev := Event{Execution: r.cfg.Execution, Section: u.name, Detail: d, Subject: subject, Message: message}
	if r.cfg.Observer != nil && d != SectionFailed && (!u.frame.inArm || armForwarded[d] || d == DetailLua || d == ModelTurnStarted || d == ToolCallStarted) {
		r.cfg.Observer.Observe(ev)
	}
	if r.cfg.Tracer == nil {
		return
	}
	if r.cfg.TraceTurnsOnly {
		if d == ModelTurnCompleted || d == ModelTurnFailed {
			u.trace(ev, info)
		}
		return
	}
	if traced[d] || u.via == ViaH1 && u.h1Traced(d) {
		u.trace(ev, info)
	}
}

// h1Traced says whether the tracer gets the H1's event d. It gets all of
// them, since the H1 has no start event of its own (its first event starts
// it), but its teardown's start, and its teardown's end when the prompt has
// no H1 blocks: such an H1 runs nothing and reports only its teardown, so
// it has no step, and a Lua-only run's usual H1 is one (two calls fewer).
func (u *unit) h1Traced(d Detail) bool {
	switch d {
	case LuaTeardownStarted:
		return false
	case LuaTeardownSucceeded:
		return len(u.r.p.H1) > 0
	}
	return true
}

// traced are the events a tracer gets from a section or an arm: their
// structure, turns, tool calls and log lines, and from the run its failure.
// Lua phases, store operations and scope checks, most of a run's events,
// are not handed over (a trace has no use for them, and each would cost a
// call), nor the run's start and success, which a tracer's making and the
// run's result stand for; the H1's events are handed over as h1Traced says.
var traced = func() (set [SectionFailed + 1]bool) {
	for _, d := range []Detail{
		RunFailed, SectionStarted, SectionFinished, SectionFailed,
		ModelTurnStarted, ModelTurnCompleted, ModelTurnFailed, ToolCallStarted, ToolCallSucceeded, ToolCallFailed,
		FanoutArmStarted, FanoutArmSucceeded, FanoutArmExhausted, FanoutArmFailed, FanoutArmCancelled, DetailLua,
	} {
		set[d] = true
	}
	return set
}()

// turnInfo describes a chat request about to be sent.
func (u *unit) turnInfo(req *gateway.ChatRequest) *Info {
	in := &Info{Model: req.Model}
	for _, m := range req.Messages {
		in.PromptBytes += len(m.Content)
	}
	if u.r.cfg.CaptureContent {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				in.Prompt = req.Messages[i].Content
				break
			}
		}
	}
	return in
}

// completionInfo describes a completed turn.
func (u *unit) completionInfo(mb *modelBinding, text, finish string, calls []gateway.ToolCall, usage gateway.Usage) *Info {
	in := &Info{Model: mb.model.ID, ReplyBytes: len(text), Finish: finish, Usage: usage}
	for _, c := range calls {
		in.ToolCalls = append(in.ToolCalls, c.Name)
	}
	if u.r.cfg.CaptureContent {
		in.Reply = text
	}
	return in
}

// callInfo describes a tool call the model asked for.
func (u *unit) callInfo(call gateway.ToolCall) *Info {
	in := &Info{Tool: call.Name, ArgBytes: len(call.Arguments)}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(call.Arguments), &obj) == nil {
		for k := range obj {
			in.ArgKeys = append(in.ArgKeys, k)
		}
		slices.Sort(in.ArgKeys)
	}
	if u.r.cfg.CaptureContent {
		in.Arguments = string(call.Arguments)
	}
	return in
}

// errInfo is a failure's message, trimmed of surrounding space.
func errInfo(err error) *Info {
	if err == nil {
		return &Info{}
	}
	return &Info{Err: strings.TrimSpace(err.Error())}
}
