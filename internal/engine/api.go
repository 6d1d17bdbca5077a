package engine

import (
	"errors"
	"strconv"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/match"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// Options is everything a run needs besides the prompt, its args and its
// store.
type Options struct {
	// Execution is the run id every observation carries; "" mints one.
	Execution string
	// Client is the gateway, which the host configures and owns (its idle
	// connections are the host's to close). nil means the host configured
	// none: a Lua-only prompt still runs, and a model call fails saying
	// what to set (as with a gateway.NewDisabled client).
	Client *gateway.Client
	// Models is the catalog models.need binds against, when ModelSet is
	// nil.
	Models []gateway.Model
	// ModelSet, when set, is the host's live model list: the run binds
	// against the snapshot it takes at its start, and a models.need that
	// finds no model asks it once for a newer one (the list may have been
	// fetched before the model server was up, or before a model was
	// pulled). Models is ignored then.
	ModelSet *modelset.Set
	// Tools are the live tools tools.need binds against. Fanout arms may
	// call them concurrently.
	Tools []tools.Tool
	// Ranking is how tools.need and models.need rank their candidates;
	// the zero value is the lexical ranker with its policies.
	Ranking
	// ModelPicks, when set, remembers the lexical ranker's model bindings
	// across the runs that share it (one per Ranking); nil ranks every
	// run's model list afresh.
	ModelPicks *ModelPicks
	// Params are the caller's typed arguments, already validated against
	// the prompt's `arguments:` with defaults applied (the host's job:
	// see prompt.CoerceArgument). Every VM of the run sees them as the
	// global table params; nil binds no params global.
	Params map[string]any
	// Observer receives the run's observations; nil discards them.
	Observer Observer
	// Tracer, when set, receives the run's structural observations as
	// [TraceEvent]s: sections and fanout arms starting and ending (arms'
	// own included, which Observer does not see), model turns, tool calls
	// and log lines, each placed in the run's structure, with what turns
	// and tool calls measured, and the run's failure; not Lua phases,
	// store operations or the run's start and success. nil builds none of it. Like
	// Observer it must not block and is called concurrently by arms.
	Tracer Tracer
	// TraceTurnsOnly narrows what Tracer gets to the ends of model turns:
	// ModelTurnCompleted with its Info's Model and Usage, ModelTurnFailed
	// with ErrKind (and Err). That is all a host that only counts tokens by
	// model and gateway errors needs (the server's /metrics with traces
	// off); the run's structure and the Info of turn starts, tool calls
	// (which parses their arguments), arms and failures are then not built.
	TraceTurnsOnly bool
	// CaptureContent adds the verbatim text of prompts, replies, tool
	// arguments and results to the tracer's Info. Off, the tracer gets
	// sizes, names and counts only.
	CaptureContent bool
	// Debug, when set, receives every completed model turn's request and
	// response bodies, fanout arms' turns included. Calls never overlap.
	Debug func(DebugTurn)
	// Limits bound the run; zero fields take the defaults.
	Limits Limits
	// Now is the clock for sys.when and sys.now; nil is time.Now. Fanout
	// arms call it concurrently.
	Now func() time.Time
	// SpeculateUntil, when set, makes the run a speculative attempt: the
	// host runs it inline and, if it stops, throws its result away and
	// runs the prompt again without it. The attempt stops, with an error
	// that is [ErrSpeculationStopped], before anything that would wait
	// on the host or reach outside the run: a model turn, models.need,
	// models.default, models.infer, handle:infer, tools.need, fanout
	// (execute runs inline); and once the clock passes SpeculateUntil,
	// read without a timer (every 10,000 Lua instructions, at the VMs'
	// memory syncs, when a pattern search polls, and at each chunk and
	// section). Observations made
	// before the stop are the host's to discard, and so are the store
	// writes: the store Run was given holds what the attempt wrote
	// (store.append, store.delete included), so the run again takes a
	// fresh store, seeded anew. The zero time is an ordinary run.
	SpeculateUntil time.Time
}

// ErrSpeculationStopped is what a speculative attempt's error is (with
// errors.Is) when it stopped (see [Options.SpeculateUntil]). Nothing
// outside the run happened: no gateway request, no tool call, no
// goroutine left.
var ErrSpeculationStopped = luavm.ErrSpeculationStopped

// Limits bound a run. Zero fields take the defaults (prompt-language §3.10).
type Limits struct {
	// MaxToolIterations caps model rounds per loop-capable prose block
	// when the frontmatter does not set max_tool_iterations (default 24).
	MaxToolIterations int
	// FanoutConcurrency caps fanout arms in flight (default 8).
	FanoutConcurrency int
	// Limits bound each of the run's VMs: the H1's, every section
	// entry's and every fanout arm's. Its zero fields take the luavm
	// defaults; its LuaTime is per VM, and time spent waiting on the
	// model, tools or execute chains does not count.
	luavm.Limits
}

// DefaultMaxToolIterations is the default of [Limits.MaxToolIterations]. It
// is the prompt package's, so the parser's documented default and the
// engine's cannot drift apart.
const DefaultMaxToolIterations = prompt.DefaultMaxToolIterations

// DefaultFanoutConcurrency is the default of [Limits.FanoutConcurrency].
const DefaultFanoutConcurrency = 8

// MaxDepth caps execute (and fanout) nesting below the top-level walk.
const MaxDepth = 8

// Result is what a run produced. Turns is the number of completed model
// turns and Tokens the usage the model replies reported, summed over the
// whole run (fanout arms included); both are set on failure too. A server
// that reports no usage adds 0, so Tokens is a lower bound.
type Result struct {
	Value  string
	Turns  int
	Tokens gateway.Usage
}

// DebugTurn is one completed model turn, for opt-in debug capture.
type DebugTurn struct {
	Execution string
	Section   string
	// Turn is the 1-based index of the turn in the run, in completion
	// order (concurrent fanout arms interleave).
	Turn         int
	Request      []byte
	Response     []byte
	FinishReason string
	Reasoning    string
}

// Kind classifies a run failure.
type Kind uint8

const (
	KindParse Kind = iota + 1
	KindVersion
	KindBinding
	KindCompletion
	KindTool
	KindLua
	KindQuota
	KindSubstitution
	KindCancelled
	KindInternal
)

var kindNames = [...]string{
	KindParse:        "parse",
	KindVersion:      "version",
	KindBinding:      "binding",
	KindCompletion:   "completion",
	KindTool:         "tool",
	KindLua:          "lua",
	KindQuota:        "quota",
	KindSubstitution: "substitution",
	KindCancelled:    "cancelled",
	KindInternal:     "internal",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is every failure Run returns. Error() is the inner message.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether running again may succeed: gateway transport
// failures, malformed replies and 5xx/429 statuses.
func (e *Error) Retryable() bool {
	var r interface{ Retryable() bool }
	return e.Kind == KindCompletion && errors.As(e.Err, &r) && r.Retryable()
}

// Cancelled reports whether the run was cancelled.
func (e *Error) Cancelled() bool { return e.Kind == KindCancelled }

// Observer receives observations. Observe must not block; it may be called
// concurrently (fanout arms).
type Observer interface {
	Observe(Event)
}

// Tracer receives a run's events with their structure (see
// [Options.Tracer]).
type Tracer interface {
	Observe(TraceEvent)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f.
func (f ObserverFunc) Observe(e Event) { f(e) }

// Event is one observation: what happened (Detail) in which section of
// which run. Message is set only for DetailLua, as "Lua: <message>".
// Subject names what a wait is on, only for ModelTurnStarted (the model's
// alias and id, "writer, llama3.1:latest") and ToolCallStarted (the tool's
// alias), so a host can tell its client what a long run is waiting for.
type Event struct {
	Execution string
	Section   string
	Detail    Detail
	Message   string
	Subject   string
}

// String renders the event's detail: the fixed text, or Message for log
// lines.
func (e Event) String() string {
	if e.Detail == DetailLua {
		return e.Message
	}
	return e.Detail.String()
}

// Detail is the fixed observation vocabulary (prompt-language §3.11).
// Observations never carry prose, model I/O, tool arguments or results, paths
// or secrets; the only dynamic text is a log() message.
type Detail uint16

const (
	ParseStarted Detail = iota + 1
	ParseSucceeded
	ParseFailed
	RunStarted
	RunSucceeded
	RunFailed
	SectionStarted
	SectionFinished
	ModelTurnCompleted
	ModelTurnFailed
	ModelTurnTruncated
	ToolCallSucceeded
	ToolCallFailed
	LuaCompilationStarted
	LuaCompilationSucceeded
	LuaCompilationFailed
	LuaSharedLoadStarted
	LuaSharedLoadSucceeded
	LuaSharedLoadFailed
	LuaChunkStarted
	LuaChunkSucceeded
	LuaChunkFailed
	LuaReplyBindingStarted
	LuaReplyBindingSucceeded
	LuaReplyBindingFailed
	LuaTeardownStarted
	LuaTeardownSucceeded
	ToolScopeValidationStarted
	ToolScopeValidationSucceeded
	ToolScopeValidationFailed
	StoreWriteSucceeded
	StoreWriteFailed
	StoreAppendSucceeded
	StoreAppendFailed
	StoreReadSucceeded
	StoreReadFailed
	StoreReadNumberedSucceeded
	StoreReadNumberedFailed
	StoreReplaceSucceeded
	StoreReplaceFailed
	StoreDeleteSucceeded
	StoreDeleteFailed
	StoreGlobSucceeded
	StoreGlobFailed
	FanoutArmStarted
	FanoutArmSucceeded
	FanoutArmExhausted
	FanoutArmFailed
	FanoutArmCancelled
	// ModelTurnStarted is a chat request about to be sent; the turn ends
	// with ModelTurnCompleted or ModelTurnFailed (or the run's
	// cancellation).
	ModelTurnStarted
	// ToolCallStarted is a tool call the model asked for, about to run;
	// it ends with ToolCallSucceeded or ToolCallFailed.
	ToolCallStarted
	// DetailLua is a log() line; Event.Message holds "Lua: <message>".
	DetailLua
)

var detailNames = [...]string{
	ParseStarted:                 "Parse started",
	ParseSucceeded:               "Parse succeeded",
	ParseFailed:                  "Parse failed",
	RunStarted:                   "Run started",
	RunSucceeded:                 "Run succeeded",
	RunFailed:                    "Run failed",
	SectionStarted:               "Section started",
	SectionFinished:              "Section finished",
	ModelTurnCompleted:           "Model turn completed",
	ModelTurnFailed:              "Model turn failed",
	ModelTurnTruncated:           "Model turn truncated",
	ToolCallSucceeded:            "Tool call succeeded",
	ToolCallFailed:               "Tool call failed",
	LuaCompilationStarted:        "Lua compilation started",
	LuaCompilationSucceeded:      "Lua compilation succeeded",
	LuaCompilationFailed:         "Lua compilation failed",
	LuaSharedLoadStarted:         "Lua shared load started",
	LuaSharedLoadSucceeded:       "Lua shared load succeeded",
	LuaSharedLoadFailed:          "Lua shared load failed",
	LuaChunkStarted:              "Lua chunk started",
	LuaChunkSucceeded:            "Lua chunk succeeded",
	LuaChunkFailed:               "Lua chunk failed",
	LuaReplyBindingStarted:       "Lua reply binding started",
	LuaReplyBindingSucceeded:     "Lua reply binding succeeded",
	LuaReplyBindingFailed:        "Lua reply binding failed",
	LuaTeardownStarted:           "Lua teardown started",
	LuaTeardownSucceeded:         "Lua teardown succeeded",
	ToolScopeValidationStarted:   "Tool scope validation started",
	ToolScopeValidationSucceeded: "Tool scope validation succeeded",
	ToolScopeValidationFailed:    "Tool scope validation failed",
	StoreWriteSucceeded:          "Store write succeeded",
	StoreWriteFailed:             "Store write failed",
	StoreAppendSucceeded:         "Store append succeeded",
	StoreAppendFailed:            "Store append failed",
	StoreReadSucceeded:           "Store read succeeded",
	StoreReadFailed:              "Store read failed",
	StoreReadNumberedSucceeded:   "Store read_numbered succeeded",
	StoreReadNumberedFailed:      "Store read_numbered failed",
	StoreReplaceSucceeded:        "Store replace succeeded",
	StoreReplaceFailed:           "Store replace failed",
	StoreDeleteSucceeded:         "Store delete succeeded",
	StoreDeleteFailed:            "Store delete failed",
	StoreGlobSucceeded:           "Store glob succeeded",
	StoreGlobFailed:              "Store glob failed",
	FanoutArmStarted:             "Fanout arm started",
	FanoutArmSucceeded:           "Fanout arm succeeded",
	FanoutArmExhausted:           "Fanout arm exhausted",
	FanoutArmFailed:              "Fanout arm failed",
	FanoutArmCancelled:           "Fanout arm cancelled",
	ModelTurnStarted:             "Model turn started",
	ToolCallStarted:              "Tool call started",
	DetailLua:                    "Lua",
	SectionFailed:                "Section failed",
}

// String is the fixed text of the detail, e.g. "Run started".
func (d Detail) String() string {
	if int(d) < len(detailNames) && detailNames[d] != "" {
		return detailNames[d]
	}
	return "Detail(" + strconv.Itoa(int(d)) + ")"
}

// Ranking is the ranker a run binds needs with and its thresholds. A
// host sets it once ([retrieval] in prompts.toml) and passes it to every
// run and probe, so list_prompts' binding problems are judged as runs
// bind.
type Ranking struct {
	// Ranker ranks needs against tools and models; nil uses the lexical
	// ranker with match.LexicalPolicy (tools) and
	// match.LexicalModelPolicy (models).
	Ranker match.Ranker
	// ToolPolicy and ModelPolicy override the decision thresholds; nil
	// takes the lexical defaults above.
	ToolPolicy  *match.Policy
	ModelPolicy *match.Policy
}
