package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// The run record's wire form lives here, beside the output schema that
// describes it (runRecordOutput in tools.go): runs keeps records and knows
// nothing about MCP; the server decides how a caller reads them.

// recordText is the content text an MCP reply carries for a run record:
// the value verbatim, the error verbatim, or a note telling the caller how
// to collect a run that is still going.
func recordText(r runs.Result) string {
	switch r.Status {
	case runs.StatusCompleted:
		return r.Value
	case runs.StatusFailed:
		return r.Error
	default:
		return fmt.Sprintf("%s is still running as run %s. Collect it with check_run.", r.Prompt, r.RunID)
	}
}

// recordIsError reports whether the reply is an error result: only a
// failed run is. A running result is not a failure; it is a promise to
// collect later.
func recordIsError(r runs.Result) bool { return r.Status == runs.StatusFailed }

// validStatus reports whether s is one of the three statuses the output
// schema (runRecordOutput) allows.
func validStatus(s runs.Status) bool {
	return s == runs.StatusRunning || s == runs.StatusCompleted || s == runs.StatusFailed
}

// record is a run record as run_prompt and check_run carry it in
// structuredContent: the eight-key object runRecordOutput describes.
type record runs.Result

// wire is the eight-key object: the reference's seven plus tokens (a
// deviation, mcp-server §4.6). Keys are declared in alphabetical order,
// which is the order the reference writes them, so the seven keys it has
// are byte for byte its own, and the object matches what a map[string]any
// of it would marshal to.
type wire struct {
	ElapsedMS uint64      `json:"elapsed_ms"`
	Error     *string     `json:"error"`
	Prompt    string      `json:"prompt"`
	RunID     string      `json:"run_id"`
	Status    runs.Status `json:"status"`
	Tokens    wireTokens  `json:"tokens"`
	Turns     uint32      `json:"turns"`
	Value     *string     `json:"value"`
}

// wireTokens is the tokens object, its keys in alphabetical order too.
type wireTokens struct {
	Completion uint64 `json:"completion"`
	Prompt     uint64 `json:"prompt"`
}

// MarshalJSON writes the wire object: always all eight keys, null where a
// field does not apply (value unless completed, error unless failed). A
// running result is written with turns and tokens 0 whatever the struct
// holds.
//
// It writes the bytes itself, in wire's key order and with jsonwire's
// string encoding, instead of encoding wire by reflection: every
// run_prompt reply renders one, and the reflective encoder (with the
// validation encoding/json gives a Marshaler's output) was the largest
// part of rendering it. TestResultWireObjects and TestRecordIsWire hold
// the bytes to what encoding wire gives.
func (r record) MarshalJSON() ([]byte, error) {
	if !validStatus(r.Status) {
		return nil, fmt.Errorf("render run %s: status %q is not running, completed or failed", r.RunID, r.Status)
	}
	turns, tokens := r.Turns, r.Tokens
	if r.Status == runs.StatusRunning {
		turns, tokens = 0, runs.Tokens{}
	}
	// The members' names, nulls and longest numbers take 200 bytes; the
	// strings their length when nothing in them is escaped. (160 without
	// the run id was 4 bytes short of the shortest record: every record
	// grew its buffer once, issue #12.)
	b := make([]byte, 0, 200+len(r.RunID)+len(r.Prompt)+len(r.Value)+len(r.Error))
	b = append(b, `{"elapsed_ms":`...)
	b = strconv.AppendUint(b, r.ElapsedMS, 10)
	b = append(b, `,"error":`...)
	b = appendNullable(b, r.Error, r.Status == runs.StatusFailed)
	b = append(b, `,"prompt":`...)
	b = jsonwire.AppendString(b, r.Prompt)
	b = append(b, `,"run_id":`...)
	b = jsonwire.AppendString(b, r.RunID)
	b = append(b, `,"status":`...)
	b = jsonwire.AppendString(b, string(r.Status))
	b = append(b, `,"tokens":{"completion":`...)
	b = strconv.AppendUint(b, tokens.Completion, 10)
	b = append(b, `,"prompt":`...)
	b = strconv.AppendUint(b, tokens.Prompt, 10)
	b = append(b, `},"turns":`...)
	b = strconv.AppendUint(b, uint64(turns), 10)
	b = append(b, `,"value":`...)
	b = appendNullable(b, r.Value, r.Status == runs.StatusCompleted)
	return append(b, '}'), nil
}

// appendNullable appends s as a JSON string when present, else null.
func appendNullable(b []byte, s string, present bool) []byte {
	if !present {
		return append(b, "null"...)
	}
	return jsonwire.AppendString(b, s)
}

// UnmarshalJSON reads a wire object back, refusing one whose nulls do not
// agree with its status, so a client or test never holds an impossible
// result.
func (r *record) UnmarshalJSON(data []byte) error {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("read a run result: %w", err)
	}
	var out record
	switch w.Status {
	case runs.StatusCompleted:
		if w.Value == nil || w.Error != nil {
			return errors.New("read a run result: a completed run carries a value and no error")
		}
		out = record{Value: *w.Value}
	case runs.StatusFailed:
		if w.Error == nil || w.Value != nil {
			return errors.New("read a run result: a failed run carries an error and no value")
		}
		out = record{Error: *w.Error}
	case runs.StatusRunning:
		if w.Value != nil || w.Error != nil || w.Turns != 0 || w.Tokens != (wireTokens{}) {
			return errors.New("read a run result: a running run carries no value, no error, 0 turns and 0 tokens")
		}
	default:
		return fmt.Errorf("read a run result: status %q is not running, completed or failed", w.Status)
	}
	out.RunID, out.Prompt, out.Status = w.RunID, w.Prompt, w.Status
	out.Turns, out.ElapsedMS = w.Turns, w.ElapsedMS
	out.Tokens = runs.Tokens{Prompt: w.Tokens.Prompt, Completion: w.Tokens.Completion}
	*r = out
	return nil
}
