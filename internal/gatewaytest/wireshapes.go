package gatewaytest

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// wireShapeFiles are the recorded replies of real model servers (Ollama,
// llama.cpp, vLLM, LiteLLM, OpenAI and deviations users reported);
// testdata/wire-shapes/README.md names the source of each. An embed.FS is
// read-only, so sharing it is not shared mutable state.
//
//go:embed testdata/wire-shapes/*.json
var wireShapeFiles embed.FS

// Recorded is one reply a real server sent: its HTTP status and body.
type Recorded struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// Reply serves the recorded body verbatim with its status, whatever the
// request (nothing is echoed into it).
func (r Recorded) Reply() Reply { return Status(r.Status, string(r.Body)) }

// WireShape is one recorded profile of a real server: what it answers to
// GET /v1/models, to a prose turn, to a turn that calls the tool "convert"
// with {"value":10,"pair":"km_mi"}, and to the turn that follows the tool
// result. A status other than 200 is that server's error for the step.
// Final bodies hold the placeholder "{TOOL_RESULT}" where the answer
// repeats the tool's result.
type WireShape struct {
	// Name is the file name without ".json", e.g. "vllm-no-auto-tool".
	Name     string
	Models   Recorded `json:"models"`
	Prose    Recorded `json:"prose"`
	ToolCall Recorded `json:"toolcall"`
	Final    Recorded `json:"final"`
}

// ToolResultPlaceholder stands in a WireShape's Final body for the tool's
// result.
const ToolResultPlaceholder = "{TOOL_RESULT}"

// WireShapes returns every recorded profile, sorted by name. A file with
// an unknown step, a missing step or a step without status and body is an
// error naming the file, so a new recording cannot be half read.
func WireShapes() ([]WireShape, error) {
	names, err := fs.Glob(wireShapeFiles, "testdata/wire-shapes/*.json")
	if err != nil {
		return nil, fmt.Errorf("list the wire shapes: %w", err)
	}
	out := make([]WireShape, 0, len(names))
	for _, name := range names {
		data, err := wireShapeFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read wire shape %s: %w", name, err)
		}
		var ws WireShape
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ws); err != nil {
			return nil, fmt.Errorf("wire shape %s: %w; each file holds models, prose, toolcall and final, each {status, body}", name, err)
		}
		ws.Name = strings.TrimSuffix(path.Base(name), ".json")
		for step, r := range map[string]Recorded{"models": ws.Models, "prose": ws.Prose, "toolcall": ws.ToolCall, "final": ws.Final} {
			if r.Status < 100 || r.Status > 599 || len(r.Body) == 0 {
				return nil, fmt.Errorf("wire shape %s: step %q needs a status and a body", name, step)
			}
		}
		out = append(out, ws)
	}
	return out, nil
}
