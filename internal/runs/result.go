package runs

import (
	"crypto/rand"
	"encoding/hex"
	"time"
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

// Result is a run as a caller reads it. It is comparable with ==: the
// constructors leave Value empty unless completed and Error empty unless
// failed. How a caller reads it on the wire is the server's business.
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
	// Tokens are what the run's model replies reported spending, failed
	// runs included; always zero while running, like Turns.
	Tokens Tokens
}

// Tokens are model tokens as the gateway's replies report them (their
// usage). A server that reports none adds 0, so they are a lower bound.
type Tokens struct {
	Prompt     uint64
	Completion uint64
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
