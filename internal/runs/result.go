package runs

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
)

// NewRunID returns a fresh run id: 128 bits from crypto/rand written as 32
// lowercase hex digits. The space is large enough that a collision does not
// happen in one process's life; Launch still refuses one rather than
// overwriting a record.
func NewRunID() string {
	var b [16]byte
	// crypto/rand.Read never returns an error: on failure it crashes the
	// program, which is the right answer when the OS has no randomness.
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Status is where a run stands.
type Status string

const (
	// StatusRunning: the run has not reached a terminal record yet.
	StatusRunning Status = "running"
	// StatusCompleted: the run produced a value.
	StatusCompleted Status = "completed"
	// StatusFailed: the run ended without a value; Result.Error says why.
	StatusFailed Status = "failed"
)

func (s Status) valid() bool {
	return s == StatusRunning || s == StatusCompleted || s == StatusFailed
}

// Result is a run as a caller reads it. It is comparable with ==: the
// constructors leave Value empty unless completed and Error empty unless
// failed, which is also what MarshalJSON relies on to write null.
type Result struct {
	RunID  string
	Prompt string // the catalog's canonical name, not the caller's spelling
	Status Status
	// Value is the run's value; meaningful only when Status is completed.
	Value string
	// Error says why the run failed; meaningful only when Status is failed.
	Error     string
	Turns     uint32 // completed model turns; always 0 while running
	ElapsedMS uint64
}

// Completed is the result of a run that produced value.
func Completed(runID, prompt, value string, turns uint32, elapsed time.Duration) Result {
	return Result{RunID: runID, Prompt: prompt, Status: StatusCompleted, Value: value, Turns: turns, ElapsedMS: millis(elapsed)}
}

// Failed is the result of a run that ended without a value.
func Failed(runID, prompt, message string, turns uint32, elapsed time.Duration) Result {
	return Result{RunID: runID, Prompt: prompt, Status: StatusFailed, Error: message, Turns: turns, ElapsedMS: millis(elapsed)}
}

// Running is the snapshot of a run that is still going. Its turns are 0:
// the registry does not follow a run's progress, only its end.
func Running(runID, prompt string, elapsed time.Duration) Result {
	return Result{RunID: runID, Prompt: prompt, Status: StatusRunning, ElapsedMS: millis(elapsed)}
}

// millis is d in whole milliseconds; a negative d (a clock that stepped back)
// reads as 0 rather than wrapping.
func millis(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(d.Milliseconds())
}

// Text is the content text an MCP reply carries for this result: the value
// verbatim, the error verbatim, or a note telling the caller how to collect a
// run that is still going.
func (r Result) Text() string {
	switch r.Status {
	case StatusCompleted:
		return r.Value
	case StatusFailed:
		return r.Error
	default:
		return fmt.Sprintf("%s is still running as run %s. Collect it with check_run.", r.Prompt, r.RunID)
	}
}

// IsError reports whether the reply is an error result: only a failed run is.
// A running result is not a failure; it is a promise to collect later.
func (r Result) IsError() bool { return r.Status == StatusFailed }

// wire is the seven-key object. Keys are declared in alphabetical order,
// which is the order the reference writes them, so our bytes match its bytes
// and also match what a map[string]any of the same object would marshal to.
type wire struct {
	ElapsedMS uint64  `json:"elapsed_ms"`
	Error     *string `json:"error"`
	Prompt    string  `json:"prompt"`
	RunID     string  `json:"run_id"`
	Status    Status  `json:"status"`
	Turns     uint32  `json:"turns"`
	Value     *string `json:"value"`
}

// MarshalJSON writes the wire object: always all seven keys, null where a
// field does not apply (value unless completed, error unless failed). A
// running result is written with turns 0 whatever the struct holds.
func (r Result) MarshalJSON() ([]byte, error) {
	if !r.Status.valid() {
		return nil, fmt.Errorf("render run %s: status %q is not running, completed or failed", r.RunID, r.Status)
	}
	w := wire{ElapsedMS: r.ElapsedMS, Prompt: r.Prompt, RunID: r.RunID, Status: r.Status, Turns: r.Turns}
	switch r.Status {
	case StatusCompleted:
		w.Value = &r.Value
	case StatusFailed:
		w.Error = &r.Error
	case StatusRunning:
		w.Turns = 0
	}
	// Run values are prose and code; escaping <, > and & would make the wire
	// differ from the reference for no client's benefit.
	b, err := jsonwire.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("render run %s: %w", r.RunID, err)
	}
	return b, nil
}

// UnmarshalJSON reads a wire object back, refusing one whose nulls do not
// agree with its status, so a client or test never holds an impossible
// result.
func (r *Result) UnmarshalJSON(data []byte) error {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("read a run result: %w", err)
	}
	var out Result
	switch w.Status {
	case StatusCompleted:
		if w.Value == nil || w.Error != nil {
			return errors.New("read a run result: a completed run carries a value and no error")
		}
		out = Result{Value: *w.Value}
	case StatusFailed:
		if w.Error == nil || w.Value != nil {
			return errors.New("read a run result: a failed run carries an error and no value")
		}
		out = Result{Error: *w.Error}
	case StatusRunning:
		if w.Value != nil || w.Error != nil || w.Turns != 0 {
			return errors.New("read a run result: a running run carries no value, no error and 0 turns")
		}
	default:
		return fmt.Errorf("read a run result: status %q is not running, completed or failed", w.Status)
	}
	out.RunID, out.Prompt, out.Status = w.RunID, w.Prompt, w.Status
	out.Turns, out.ElapsedMS = w.Turns, w.ElapsedMS
	*r = out
	return nil
}
