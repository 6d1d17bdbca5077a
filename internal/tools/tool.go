package tools

import (
	"context"
	"encoding/json"
)

// ID is a tool's stable identity: the server that provides it and its
// name there (e.g. "promptforge"/"web_fetch").
type ID struct {
	Server string
	Name   string
}

func (id ID) String() string { return id.Server + "/" + id.Name }

// Descriptor is what binding and the model see of a tool.
type Descriptor struct {
	ID          ID
	WireName    string
	Description string
	// Parameters is the JSON Schema object of the tool's arguments.
	Parameters json.RawMessage
}

// Result is a tool's output. Untrusted output is wrapped in the run's
// untrusted-content envelope before the model sees it.
type Result struct {
	Text    string
	Trusted bool
}

// A Tool is a live tool a run may bind with tools.need. Call must honour
// ctx: a cancelled run abandons its in-flight tool call.
type Tool interface {
	Descriptor() Descriptor
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}
