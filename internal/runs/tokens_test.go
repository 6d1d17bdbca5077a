package runs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestTokensReachTheRecord: the tokens a run closure reports are in its
// terminal record, completed or failed, in what OnTerminal sees and in the
// terminal log line; a running snapshot has none.
func TestTokensReachTheRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Second)
		var terminal []Result
		cfg.OnTerminal = func(res Result) { terminal = append(terminal, res) }
		r, logs := newRegistry(t, cfg)
		const failedID = "fedcba9876543210fedcba9876543210"

		ok := launch(t, r, id32, "speak", func(context.Context) Outcome {
			time.Sleep(2 * time.Second)
			return Outcome{Value: "v", Turns: 2, Tokens: Tokens{Prompt: 40, Completion: 12}}
		})
		if got := r.Settle(t.Context(), ok); got.Status != StatusRunning || got.Tokens != (Tokens{}) {
			t.Fatalf("running snapshot %+v, want running with no tokens", got)
		}
		<-ok.Done()
		bad := launch(t, r, failedID, "speak", func(context.Context) Outcome {
			return Outcome{Err: errors.New("model turn failed"), Turns: 1, Tokens: Tokens{Prompt: 5, Completion: 6}}
		})
		<-bad.Done()
		synctest.Wait() // the terminal line and OnTerminal follow the record

		wantOK := Completed(id32, "speak", "v", 2, 2*time.Second)
		wantOK.Tokens = Tokens{Prompt: 40, Completion: 12}
		wantBad := Failed(failedID, "speak", "model turn failed", 1, 0)
		wantBad.Tokens = Tokens{Prompt: 5, Completion: 6}
		for _, want := range []Result{wantOK, wantBad} {
			if got := mustCheck(t, r, want.RunID); got != want {
				t.Errorf("Check = %+v, want %+v", got, want)
			}
		}
		if len(terminal) != 2 || terminal[0] != wantOK || terminal[1] != wantBad {
			t.Errorf("OnTerminal saw %+v", terminal)
		}
		lines := logs.withMessage(msgTerminal)
		if len(lines) != 2 {
			t.Fatalf("%d terminal lines, want 2", len(lines))
		}
		for i, want := range []Tokens{wantOK.Tokens, wantBad.Tokens} {
			if a := lines[i].Attrs; a["prompt_tokens"] != want.Prompt || a["completion_tokens"] != want.Completion {
				t.Errorf("terminal line %d: %v, want prompt_tokens %d completion_tokens %d", i, a, want.Prompt, want.Completion)
			}
		}
	})
}

// TestSettleAnswersAfterOnTerminal: the caller waiting on a run is
// answered only once OnTerminal has returned, so what it counts (the
// server's metrics, the trace's final header) already holds the run when
// the caller reads it after its reply.
func TestSettleAnswersAfterOnTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Minute)
		entered, release := make(chan Result, 1), make(chan struct{})
		cfg.OnTerminal = func(res Result) {
			entered <- res
			<-release
		}
		r, _ := newRegistry(t, cfg)
		h := launch(t, r, id32, "speak", func(context.Context) Outcome { return Outcome{Value: "v"} })
		settled := make(chan Result, 1)
		go func() { settled <- r.Settle(context.Background(), h) }()
		<-entered
		synctest.Wait()
		early := ""
		select {
		case res := <-settled:
			early = fmt.Sprintf("Settle answered %+v", res)
			settled <- res
		case <-h.Done():
			early = "Done was closed"
		default:
		}
		close(release)
		if early != "" {
			t.Fatal(early + " while OnTerminal was still running")
		}
		if res := <-settled; res.Status != StatusCompleted || res.Value != "v" {
			t.Fatalf("Settle = %+v, want the completed record", res)
		}
	})
}
