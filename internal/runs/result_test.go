package runs

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNewRunIDIs32LowercaseHexAndFresh(t *testing.T) {
	shape := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := make(map[string]bool)
	for range 1000 {
		id := NewRunID()
		if !shape.MatchString(id) {
			t.Fatalf("NewRunID() = %q, want 32 lowercase hex digits", id)
		}
		if seen[id] {
			t.Fatalf("NewRunID() repeated %q", id)
		}
		seen[id] = true
	}
}

const id32 = "0123456789abcdef0123456789abcdef"

func TestResultWireObjects(t *testing.T) {
	tests := []struct {
		name   string
		result Result
		want   string
	}{
		{
			name:   "completed carries the value and a null error",
			result: Completed(id32, "speak", "hello <world> & more", 2, 40*time.Millisecond),
			want:   `{"elapsed_ms":40,"error":null,"prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"completed","turns":2,"value":"hello <world> & more"}`,
		},
		{
			name:   "completed with an empty value is still a string",
			result: Completed(id32, "speak", "", 0, 0),
			want:   `{"elapsed_ms":0,"error":null,"prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"completed","turns":0,"value":""}`,
		},
		{
			name:   "failed carries the error and a null value",
			result: Failed(id32, "speak", "model turn failed", 1, 1500*time.Millisecond),
			want:   `{"elapsed_ms":1500,"error":"model turn failed","prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"failed","turns":1,"value":null}`,
		},
		{
			name:   "running carries neither, and 0 turns",
			result: Running(id32, "speak", 50*time.Millisecond),
			want:   `{"elapsed_ms":50,"error":null,"prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"running","turns":0,"value":null}`,
		},
		{
			name:   "running hides stray fields set by hand",
			result: Result{RunID: id32, Prompt: "speak", Status: StatusRunning, Value: "x", Error: "y", Turns: 3, ElapsedMS: 7},
			want:   `{"elapsed_ms":7,"error":null,"prompt":"speak","run_id":"0123456789abcdef0123456789abcdef","status":"running","turns":0,"value":null}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.result)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			// json.Marshal re-escapes HTML in a Marshaler's output; the
			// method's own bytes are the wire we promise.
			direct, err := tt.result.MarshalJSON()
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
			if len(fromMarshal) != 7 {
				t.Errorf("wire object has %d keys, want 7: %s", len(fromMarshal), got)
			}
		})
	}
}

func TestResultMarshalRefusesUnknownStatus(t *testing.T) {
	if _, err := (Result{RunID: id32, Status: "paused"}).MarshalJSON(); err == nil {
		t.Fatal("MarshalJSON accepted status \"paused\"")
	}
	if _, err := (Result{}).MarshalJSON(); err == nil {
		t.Fatal("MarshalJSON accepted the zero Result, which has no status")
	}
}

func TestResultStatusSerializesLowercase(t *testing.T) {
	got, err := json.Marshal(StatusRunning)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `"running"` {
		t.Fatalf("StatusRunning marshals as %s, want \"running\"", got)
	}
}

func TestResultRoundTrip(t *testing.T) {
	for _, r := range []Result{
		Completed(id32, "p", "v", 2, 40*time.Millisecond),
		Failed(id32, "p", "boom", 1, time.Second),
		Running(id32, "p", 7200*time.Second),
	} {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Result
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if back != r {
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
	} {
		var r Result
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("Unmarshal accepted %s as %+v", bad, r)
		}
	}
}

func TestResultTextAndIsError(t *testing.T) {
	tests := []struct {
		result  Result
		text    string
		isError bool
	}{
		{Completed(id32, "speak", "the value\nverbatim", 1, 0), "the value\nverbatim", false},
		{Failed(id32, "speak", "the error verbatim", 0, 0), "the error verbatim", true},
		{Running(id32, "speak", 0), "speak is still running as run " + id32 + ". Collect it with check_run.", false},
	}
	for _, tt := range tests {
		if got := tt.result.Text(); got != tt.text {
			t.Errorf("%s Text() = %q, want %q", tt.result.Status, got, tt.text)
		}
		if got := tt.result.IsError(); got != tt.isError {
			t.Errorf("%s IsError() = %v, want %v", tt.result.Status, got, tt.isError)
		}
	}
	running := Running(id32, "speak", 0).Text()
	if !strings.Contains(running, id32) || !strings.Contains(running, "check_run") {
		t.Errorf("running text %q must name the run id and check_run", running)
	}
}

func TestResultEquality(t *testing.T) {
	a := Completed(id32, "p", "v", 2, 40*time.Millisecond)
	if a != Completed(id32, "p", "v", 2, 40*time.Millisecond) {
		t.Error("two identical completed results are not equal")
	}
	for _, other := range []Result{
		Completed(id32, "p", "w", 2, 40*time.Millisecond),
		Completed(id32, "p", "v", 3, 40*time.Millisecond),
		Completed(id32, "p", "v", 2, 41*time.Millisecond),
		Completed(id32, "q", "v", 2, 40*time.Millisecond),
		Failed(id32, "p", "v", 2, 40*time.Millisecond),
		Running(id32, "p", 40*time.Millisecond),
	} {
		if a == other {
			t.Errorf("%+v == %+v", a, other)
		}
	}
	// Elapsed time is kept in whole milliseconds, so sub-millisecond
	// differences do not make results differ.
	if Running(id32, "p", 40*time.Millisecond) != Running(id32, "p", 40*time.Millisecond+999*time.Microsecond) {
		t.Error("sub-millisecond elapsed differences made running results differ")
	}
	if Running(id32, "p", -time.Second).ElapsedMS != 0 {
		t.Error("a negative elapsed time did not read as 0")
	}
}
