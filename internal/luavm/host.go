package luavm

import (
	"context"
	"encoding/json"
)

// Host is what a VM's bindings call into. The engine implements it, one
// value per VM, so every method already knows its run, section and scope.
//
// Errors returned by a Host travel through Lua as error objects: pcall can
// catch them, and when nothing does, the chunk fails with the very same
// error value, so the engine keeps its error kinds. A *ScriptError is the
// exception: it is raised as a plain Lua error at the calling line.
//
// Methods that wait take the run's context; the VM pauses its Lua time
// budget while they run.
type Host interface {
	// Note reports a store or log observation.
	Note(n Note, msg string)

	// NeedTool, AlwaysTool, NeedModel and DefaultModel are the live H1
	// resolution calls. opts is nil when models.need got none.
	NeedTool(ctx context.Context, alias, description string, override *string) (ToolHandle, error)
	AlwaysTool(alias string, override *string) error
	NeedModel(ctx context.Context, alias, description string, opts *ModelOpts) (ModelHandle, error)
	// DefaultModel designates alias as the prompt's default model; when
	// description is non-nil it declares the alias first (atomically).
	DefaultModel(ctx context.Context, alias string, description *string, opts *ModelOpts) (ModelHandle, error)

	// AddTools puts declared aliases into this section's scope.
	AddTools(aliases []string, override *string) error
	// AddLocalTool registers a Lua-backed tool; the VM keeps the handler
	// and the host dispatches to it with VM.CallLocalTool.
	AddLocalTool(alias, description string, schema json.RawMessage) error
	// ToolCalls reports how often alias was dispatched in this section.
	ToolCalls(alias string) (int, error)

	UseModel(alias string) (ModelHandle, error)
	GetModel(alias string) (ModelHandle, error)
	// Infer runs one tool-free model round. model is nil for models.infer
	// (the section's model).
	Infer(ctx context.Context, model *ModelHandle, prompt string) (string, error)

	// Jump validates a jump target and returns a token the walk resolves
	// once the chunk has unwound.
	Jump(target string) (any, error)
	Execute(ctx context.Context, target string, input *string) (string, error)
	ListFromSection(target string) ([]string, error)
	// Fanout runs worker once per member of the collection.
	Fanout(ctx context.Context, worker string, members []any) ([]FanoutResult, error)
}

// Note is an observation a VM reports through [Host.Note].
type Note uint8

const (
	NoteLog Note = iota + 1 // msg is the log message
	NoteStoreWriteSucceeded
	NoteStoreWriteFailed
	NoteStoreAppendSucceeded
	NoteStoreAppendFailed
	NoteStoreReadSucceeded
	NoteStoreReadFailed
	NoteStoreReadNumberedSucceeded
	NoteStoreReadNumberedFailed
	NoteStoreReplaceSucceeded
	NoteStoreReplaceFailed
	NoteStoreDeleteSucceeded
	NoteStoreDeleteFailed
	NoteStoreGlobSucceeded
	NoteStoreGlobFailed
)

// ToolHandle is what tools.need returns and what the alias globals of a
// section hold.
type ToolHandle struct {
	Alias       string
	Description string // the capability text given to tools.need
	WireName    string
	// Parameters is the tool's JSON schema; empty on the alias globals.
	Parameters json.RawMessage
}

// ModelHandle is what models.need/default/use/get return.
type ModelHandle struct {
	Alias       string
	ModelID     string
	Description string
	Context     uint32
	Thinking    *bool
	Temperature *float64
	MaxTokens   *int
	Dialect     string
}

// ModelOpts are the validated models.need options.
type ModelOpts struct {
	Thinking    *bool
	Context     *uint32
	Temperature *float64
	MaxTokens   *int
}

// FanoutResult is one arm's outcome as Lua sees it.
type FanoutResult struct {
	Text      string
	OK        bool
	Exhausted bool
	Item      any
}
