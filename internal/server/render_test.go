package server

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// id32 is a run id of the shape runs.NewRunID mints.
const id32 = "0123456789abcdef0123456789abcdef"

// spent is r with the tokens a run reported.
func spent(r runs.Result, prompt, completion uint64) runs.Result {
	r.Tokens = runs.Tokens{Prompt: prompt, Completion: completion}
	return r
}

func TestResultWireObjects(t *testing.T) {
	tests := []struct {
		name   string
		result runs.Result
		want   string
	}{
		{
			name:   "completed carries the value and a null error",
			result: spent(runs.Completed(id32, "speak", "hello <world> & more", 2, 40*time.Millisecond), 40, 12),
			want:   `{"elapsed_ms":40,"error":null,"prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"completed","tokens":{"completion":12,"prompt":40},"turns":2,"value":"hello <world> & more"}`,
		},
		{
			name:   "completed with an empty value is still a string",
			result: runs.Completed(id32, "speak", "", 0, 0),
			want:   `{"elapsed_ms":0,"error":null,"prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"completed","tokens":{"completion":0,"prompt":0},"turns":0,"value":""}`,
		},
		{
			name:   "failed carries the error, a null value and the tokens it spent",
			result: spent(runs.Failed(id32, "speak", "model turn failed", 1, 1500*time.Millisecond), 9412, 0),
			want:   `{"elapsed_ms":1500,"error":"model turn failed","prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"failed","tokens":{"completion":0,"prompt":9412},"turns":1,"value":null}`,
		},
		{
			name:   "running carries neither, and 0 turns and tokens",
			result: runs.Running(id32, "speak", 50*time.Millisecond),
			want:   `{"elapsed_ms":50,"error":null,"prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"running","tokens":{"completion":0,"prompt":0},"turns":0,"value":null}`,
		},
		{
			name:   "running hides stray fields set by hand",
			result: runs.Result{RunID: id32, Prompt: "speak", Status: runs.StatusRunning, Value: "x", Error: "y", Turns: 3, ElapsedMS: 7, Tokens: runs.Tokens{Prompt: 1, Completion: 2}},
			want:   `{"elapsed_ms":7,"error":null,"prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"running","tokens":{"completion":0,"prompt":0},"turns":0,"value":null}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(record(tt.result))
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			// json.Marshal re-escapes HTML in a Marshaler's output; the
			// method's own bytes are the wire we promise.
			direct, err := record(tt.result).MarshalJSON()
			if err != nil {
				t.Fatalf("MarshalJSON: %v", err)
			}
			if string(direct) != tt.want {
				t.Errorf("MarshalJSON =\n%s\nwant\n%s", direct, tt.want)
			}
			var fromMarshal, fromWant map[string]any
			if err := json.Unmarshal(got, &fromMarshal); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &fromWant); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fromMarshal, fromWant) {
				t.Errorf("json.Marshal = %s, want the same object as %s", got, tt.want)
			}
			if len(fromMarshal) != 8 {
				t.Errorf("wire object has %d keys, want 8: %s", len(fromMarshal), got)
			}
		})
	}
}

func TestResultMarshalRefusesUnknownStatus(t *testing.T) {
	if _, err := (record{RunID: id32, Status: "paused"}).MarshalJSON(); err == nil {
		t.Fatal("MarshalJSON accepted status \"paused\"")
	}
	if _, err := (record{}).MarshalJSON(); err == nil {
		t.Fatal("MarshalJSON accepted the zero Result, which has no status")
	}
}

func TestResultRoundTrip(t *testing.T) {
	for _, r := range []runs.Result{
		spent(runs.Completed(id32, "p", "v", 2, 40*time.Millisecond), 40, 12),
		spent(runs.Failed(id32, "p", "boom", 1, time.Second), 5, 0),
		runs.Running(id32, "p", 7200*time.Second),
	} {
		data, err := record(r).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back record
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if runs.Result(back) != r {
			t.Errorf("round trip of %s = %+v, want %+v", data, back, r)
		}
	}
}

func TestResultUnmarshalRefusesImpossibleObjects(t *testing.T) {
	for _, bad := range []string{
		`{"elapsed_ms":0,"error":null,"prompt":"p","run_id":"x","status":"completed","turns":0,"value":null}`,
		`{"elapsed_ms":0,"error":"e","prompt":"p","run_id":"x","status":"completed","turns":0,"value":"v"}`,
		`{"elapsed_ms":0,"error":null,"prompt":"p","run_id":"x","status":"failed","turns":0,"value":null}`,
		`{"elapsed_ms":0,"error":null,"prompt":"p","run_id":"x","status":"running","turns":0,"value":"v"}`,
		`{"elapsed_ms":0,"error":null,"prompt":"p","run_id":"x","status":"running","turns":2,"value":null}`,
		`{"elapsed_ms":0,"error":null,"prompt":"p","run_id":"x","status":"paused","turns":0,"value":null}`,
		`{"elapsed_ms":0,"error":null,"prompt":"p","run_id":"x","status":"running","turns":0,"value":null,"extra":1}`,
		`{"elapsed_ms":0,"error":null,"prompt":"p","run_id":"x","status":"running","tokens":{"completion":0,"prompt":3},"turns":0,"value":null}`,
		`{"elapsed_ms":0,"error":null,"prompt":"p","run_id":"x","status":"completed","tokens":{"completion":0,"prompt":3,"total":3},"turns":0,"value":"v"}`,
	} {
		var r record
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("Unmarshal accepted %s as %+v", bad, r)
		}
	}
}

func TestResultTextAndIsError(t *testing.T) {
	tests := []struct {
		result  runs.Result
		text    string
		isError bool
	}{
		{runs.Completed(id32, "speak", "the value\nverbatim", 1, 0), "the value\nverbatim", false},
		{runs.Failed(id32, "speak", "the error verbatim", 0, 0), "the error verbatim", true},
		{runs.Running(id32, "speak", 0), "speak is still running as run " + id32 + ". Collect it with check_run.", false},
	}
	for _, tt := range tests {
		if got := recordText(tt.result); got != tt.text {
			t.Errorf("%s recordText = %q, want %q", tt.result.Status, got, tt.text)
		}
		if got := recordIsError(tt.result); got != tt.isError {
			t.Errorf("%s recordIsError = %v, want %v", tt.result.Status, got, tt.isError)
		}
	}
	running := recordText(runs.Running(id32, "speak", 0))
	if !strings.Contains(running, id32) || !strings.Contains(running, "check_run") {
		t.Errorf("running text %q must name the run id and check_run", running)
	}
}

// TestRecordIsWire holds the hand-written MarshalJSON to what encoding
// the wire struct by reflection gives (how it was written before), for
// every status and strings that need escaping.
func TestRecordIsWire(t *testing.T) {
	odd := []string{"", "plain", "hello <world> & more", "q\"uote\\back", "nl\nnul\x00tab\tdel\x7f",
		"line\u2028para\u2029", "bad\xffutf8", "émoji 🙂"}
	for _, s := range odd {
		for _, r := range []runs.Result{
			spent(runs.Completed(id32, s, s, 3, 1234*time.Millisecond), 7, 1<<40),
			spent(runs.Failed(id32, s, s, 1, 0), 0, 9),
			runs.Running(s, s, 5*time.Millisecond),
			{RunID: id32, Prompt: s, Status: runs.StatusRunning, Value: s, Error: s, Turns: 4, ElapsedMS: 1, Tokens: runs.Tokens{Prompt: 1, Completion: 2}},
		} {
			w := wire{ElapsedMS: r.ElapsedMS, Prompt: r.Prompt, RunID: r.RunID, Status: r.Status, Turns: r.Turns,
				Tokens: wireTokens{Completion: r.Tokens.Completion, Prompt: r.Tokens.Prompt}}
			switch r.Status {
			case runs.StatusCompleted:
				w.Value = &r.Value
			case runs.StatusFailed:
				w.Error = &r.Error
			case runs.StatusRunning:
				w.Turns, w.Tokens = 0, wireTokens{}
			}
			want, err := jsonwire.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			got, err := record(r).MarshalJSON()
			if err != nil || string(got) != string(want) {
				t.Errorf("MarshalJSON of %+v =\n%s (%v)\nwant\n%s", r, got, err, want)
			}
		}
	}
}

// A record writes its object in one allocation, however long its numbers
// are, when its strings need no escapes: the buffer is sized for it.
func TestRecordMarshalsInOneAllocation(t *testing.T) {
	id := runs.NewRunID()
	for _, res := range []runs.Result{
		runs.Completed(id, "echo", "hello", 0, 0),
		{RunID: id, Prompt: "p", Status: runs.StatusCompleted, Value: "v", Turns: math.MaxUint32, ElapsedMS: math.MaxUint64,
			Tokens: runs.Tokens{Prompt: math.MaxUint64, Completion: math.MaxUint64}},
		runs.Failed(id, "p", "boom", 1, time.Second),
		runs.Running(id, "p", time.Hour),
	} {
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := record(res).MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 1 {
			t.Errorf("%+v: MarshalJSON allocated %v times; want 1", res, allocs)
		}
	}
}
