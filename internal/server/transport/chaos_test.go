package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// The chaos test's size: a few thousand calls, bounded so CI runs it
// under -race on two cores in well under a minute.
const (
	chaosWorkers        = 12
	chaosCallsPerWorker = 200
	chaosSlots          = 4
)

// chaosRun is what one call returned: its run id and status, or nothing
// when the call ended without a record (cancelled, dropped, refused).
type chaosRun struct{ id, status string }

// TestChaosLeavesNothingBehind drives the real server over HTTP, both
// protocol eras, with calls that are cancelled at random moments, POSTs
// whose connections are dropped, a gateway that errors, answers slowly,
// sends a truncated body, drops its connection or never answers, and a
// reply deadline short enough that many calls come back running and are
// collected with check_run (#11, "Keep it proven"). Afterwards nothing may
// be left: no run in flight, every slot free, no call tracked, every run
// id a call returned collectable (retention is an hour) and finished, no
// gateway request open, and, once the server is stopped, the goroutines
// back to what they were before.
func TestChaosLeavesNothingBehind(t *testing.T) {
	baseline := goleak.IgnoreCurrent()
	// Registered first, so it runs after every other cleanup: the clients
	// closed, the transport and the server stopped.
	t.Cleanup(func() { goleak.VerifyNone(t, baseline) })

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	g := gatewaytest.New(t)
	client, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey()), Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	var gmu sync.Mutex
	grng := rand.New(rand.NewPCG(seed, 1))
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply {
		gmu.Lock()
		roll, delay := grng.IntN(100), time.Duration(grng.IntN(40))*time.Millisecond
		gmu.Unlock()
		switch {
		case roll < 55:
			return gatewaytest.Text("fine").WithUsage(3, 2)
		case roll < 70: // slow: answered once the delay has passed
			gate := gatewaytest.NewGate()
			time.AfterFunc(delay, gate.Release)
			return gatewaytest.Gated(gate, gatewaytest.Text("slow"))
		case roll < 78:
			return gatewaytest.Status(http.StatusInternalServerError, `{"error":{"message":"boom"}}`)
		case roll < 83:
			return gatewaytest.Status(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`)
		case roll < 90:
			return gatewaytest.Malformed(`{"choices":[{"message":`)
		case roll < 98: // the gateway drops the connection
			panic(http.ErrAbortHandler)
		default: // never answers: the gateway client's timeout ends it
			return gatewaytest.Hang()
		}
	})

	limits := server.Limits{MaxConcurrentRuns: chaosSlots, AdmissionTimeout: 200 * time.Millisecond, ReplyDeadline: 30 * time.Millisecond, RetainCompleted: time.Hour}
	hh := newHTTPHarness(t, fixture{
		prompts: map[string]string{"echo.md": echoPrompt, "summarize.md": summarizePrompt, "trio.md": trioPrompt},
		limits:  limits,
		opts: func(o *server.Options) {
			o.Client = client
			o.Models = modelset.Static([]gateway.Model{servertest.TestModel})
		},
	}, nil)
	url := hh.url + "/mcp"

	var (
		mu       sync.Mutex
		returned []chaosRun
	)
	var wg sync.WaitGroup
	for w := range chaosWorkers {
		var cs *mcp.ClientSession
		if w%2 == 0 {
			cs = hh.clientAt(t, nil, true, eraStateful)
		} else {
			cs = hh.client(t, nil)
		}
		rawSession := openSession(t, url)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)+2))
			prompts := []string{"echo", "summarize", "summarize", "trio"}
			for i := range chaosCallsPerWorker {
				prompt := prompts[rng.IntN(len(prompts))]
				roll := rng.IntN(100)
				delay := time.Duration(rng.IntN(25)) * time.Millisecond
				if roll >= 80 {
					// A raw stateful POST whose connection the client drops.
					ctx, cancel := context.WithTimeout(context.Background(), delay)
					body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":%q}}}`, i+1, prompt)
					dropPost(t, ctx, url, rawSession, body)
					cancel()
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if roll >= 55 { // cancelled by the client at a random moment
					ctx, cancel = context.WithTimeout(context.Background(), delay)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": prompt, "args": "chaos"}})
				cancel()
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("call %d of worker %d failed without being cancelled: %v", i, w, err)
					}
					continue
				}
				if run, ok := runOf(res); ok {
					mu.Lock()
					returned = append(returned, run)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Every run id a call returned is collectable, and each running one
	// finishes: the gateway client's timeout bounds every run.
	collector := hh.clientAt(t, nil, true, eraStateful)
	running := 0
	for _, run := range returned {
		if run.status == "running" {
			running++
		}
		waitFor(t, "run "+run.id+" finishing", func() bool {
			res, err := collector.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolCheckRun, Arguments: map[string]any{"run_id": run.id}})
			if err != nil {
				t.Fatalf("check_run %s: %v", run.id, err)
			}
			got, ok := runOf(res)
			if !ok {
				t.Fatalf("check_run %s (returned %s) found no run: %s", run.id, run.status, textOf(t, res))
			}
			return got.status != "running"
		})
	}
	t.Logf("%d calls returned a run record, %d of them running and collected with check_run", len(returned), running)
	if running == 0 || len(returned) < chaosWorkers*chaosCallsPerWorker/4 {
		t.Errorf("%d records, %d running: the mix did not exercise the reply deadline", len(returned), running)
	}

	waitFor(t, "every run ending, every slot free and no gateway request open", func() bool {
		st := hh.srv.Registry().Stats()
		return st.InFlight == 0 && st.Waiting == 0 && st.FreeSlots == chaosSlots && g.InFlight() == 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hh.srv.Backend().Calls.Wait(ctx); err != nil {
		t.Errorf("calls still tracked after the chaos: %v", err)
	}
	if st := hh.srv.Registry().Stats(); st.Started != st.Completed+st.Failed {
		t.Errorf("stats %+v: every started run must have ended", st)
	}
}

// dropPost sends a tools/call on session and reads its answer until ctx
// ends, which drops the connection mid-call. Safe off the test goroutine.
func dropPost(t *testing.T, ctx context.Context, url, session, body string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			t.Errorf("raw tools/call: %v", err)
		}
		return
	}
	drain(resp)
}

// runOf reads a run record from a tool result; false for a refusal that
// carries none (a busy server, a call that ended before its slot).
func runOf(res *mcp.CallToolResult) (chaosRun, bool) {
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return chaosRun{}, false
	}
	var rec struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if json.Unmarshal(raw, &rec) != nil || rec.RunID == "" || strings.TrimSpace(rec.Status) == "" {
		return chaosRun{}, false
	}
	return chaosRun{rec.RunID, rec.Status}, true
}
