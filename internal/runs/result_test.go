package runs

import (
	"encoding/json"
	"regexp"
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

func TestResultStatusSerializesLowercase(t *testing.T) {
	got, err := json.Marshal(StatusRunning)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `"running"` {
		t.Fatalf("StatusRunning marshals as %s, want \"running\"", got)
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
