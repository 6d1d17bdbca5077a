package runtrace

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/secret"
)

const benchHeader = "---\nname: t\ndescription: A test prompt.\npromptforge: 1\n---\n"

// BenchmarkTracing compares a run with traces off with the same run
// traced, each wired as the server wires it (server.launch and runFunc):
// the trace is opened (Book.Open) and the run's record registered with it
// and its start in the in-memory run store, as runs.Registry.LaunchWith
// does; the run's
// body calls Book.Enter, engine.Run and Book.End; the terminal record is
// written, with the trace in it. On a nil book (traces off) there is no
// trace; on the server's NewRecordBook (content capture off) the store
// keeps each trace with its record. A tracer stands in for the metrics'
// as next. Off and on of each prompt run side by side in one go test run
// (the target is at most 5 % more with traces).
func BenchmarkTracing(b *testing.B) {
	lua, err := prompt.Parse([]byte(benchHeader + "# Title\n\n## Run\n\n```lua\nreturn \"hello \" .. args\n```\n"))
	if err != nil {
		b.Fatal(err)
	}
	turn, err := prompt.Parse([]byte(benchHeader + "# Title\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Run\n\nSay hello to {{ args }}.\n"))
	if err != nil {
		b.Fatal(err)
	}
	g := gatewaytest.New(b)
	reply := gatewaytest.Text("hello").WithUsage(10, 2)
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return reply })
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey())})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	cfg := engine.Options{Client: c, Models: []gateway.Model{{ID: "test-model", Description: "A general assistant model for tests", Dialect: gateway.DialectOpenAI}}}

	// The server's run store and book: retain_completed's default (an
	// hour) and the registry's count bound, filled by traced runs with the
	// registry's ids, so that a run pays what it pays in a busy server's
	// steady state (the records at their bound, one evicted per run
	// finished). The store's calls are the registry's (Launch, finish),
	// made here on the benchmark's goroutine so that its thread's CPU time
	// is the whole run's.
	records := runs.NewMemoryStore(runs.RetentionOptions{RetainCompleted: time.Hour})
	book := NewRecordBook(Options{})
	ids := make([]string, 2*runs.DefaultMaxRetainedRuns)
	for i := range ids {
		ids[i] = runs.NewRunID()
	}
	ctx := context.Background()
	// record is what the registry writes for a run: its running record
	// when launched, with the trace, and its terminal one.
	record := func(b *testing.B, id string, rec *Recorder, run func() runs.Outcome) {
		var local any // traces off: nil, not a nil *Recorder
		if rec != nil {
			local = rec
		}
		// As the registry: the record starts when the trace does (its
		// reading), or reads the clock with traces off; its end is the
		// trace's (Outcome.Ended), or one reading, for both its elapsed
		// time and its Finished.
		started := rec.Started()
		if started.IsZero() {
			started = time.Now()
		}
		if err := records.Register(ctx, runs.Stored{Result: runs.Running(id, "t", 0), Owner: "local", Started: started, Local: local}); err != nil {
			b.Fatal(err)
		}
		out := run()
		at := out.Ended
		if at.IsZero() {
			at = time.Now()
		}
		res := runs.Completed(id, "t", out.Value, out.Turns, at.Sub(started))
		res.Tokens = out.Tokens
		if _, err := records.Finish(ctx, runs.Stored{Result: res, Owner: "local", Started: started, Finished: at, Local: local}); err != nil {
			b.Fatal(err)
		}
	}
	// Filled to its bound before any run is measured.
	for _, id := range ids[:runs.DefaultMaxRetainedRuns] {
		rec := book.Open(id, "t", nil)
		record(b, id, rec, func() runs.Outcome {
			book.Enter(rec, nil, &engine.Options{})
			return runs.Outcome{Ended: book.End(rec, "completed", "", 0, Tokens{})}
		})
	}
	next := new(turnEnds)
	n := runs.DefaultMaxRetainedRuns
	// body is a run as the server's: with traces (on) or without.
	body := func(b *testing.B, p *prompt.Prompt, want string, on bool) {
		var bk *Book // traces off
		if on {
			bk = book
		}
		id := ids[n%len(ids)]
		n++
		rec := bk.Open(id, "t", next)
		record(b, id, rec, func() runs.Outcome {
			opts := cfg
			opts.Execution = id
			bk.Enter(rec, next, &opts)
			res, err := engine.Run(ctx, p, "world", nil, opts)
			if err != nil || res.Value != want {
				b.Fatal(res, err)
			}
			at := bk.End(rec, "completed", "", res.Turns, Tokens{res.Tokens.PromptTokens, res.Tokens.CompletionTokens})
			return runs.Outcome{Value: res.Value, Turns: uint32(res.Turns), Tokens: runs.Tokens{Prompt: uint64(res.Tokens.PromptTokens), Completion: uint64(res.Tokens.CompletionTokens)}, Ended: at}
		})
	}
	for _, p := range []struct {
		name string
		p    *prompt.Prompt
		want string
	}{{"lua", lua, "hello world"}, {"turn", turn, "hello"}} {
		run := func(b *testing.B, on bool) { body(b, p.p, p.want, on) }
		// Each iteration runs the prompt untraced and traced, in
		// alternating order, so both see the same machine load; the
		// metrics are each one's mean and the overhead of the traced
		// run in percent. ns/op is the pair.
		b.Run(p.name, func(b *testing.B) {
			// The thread's own CPU time is measured too (where the
			// platform has it): on a loaded machine it moves much less
			// than wall time, which counts the time other processes had
			// the CPU. The goroutine is locked to its thread for it.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var off, on, offCPU, onCPU time.Duration
			// Each pair's ratios too: on a loaded machine a run the
			// scheduler preempted weighs in the sums above as much as
			// thousands of others, and their median ignores it.
			ratios := make([]float64, 0, 1<<16)
			cpuRatios := make([]float64, 0, 1<<16)
			i := 0
			for b.Loop() {
				i++
				var pair, pairCPU [2]time.Duration
				for k := range 2 {
					start, startCPU := time.Now(), threadCPU()
					half := 1 // on
					if (i+k)%2 == 0 {
						half = 0
					}
					run(b, half == 1)
					pair[half], pairCPU[half] = time.Since(start), threadCPU()-startCPU
				}
				off, on, offCPU, onCPU = off+pair[0], on+pair[1], offCPU+pairCPU[0], onCPU+pairCPU[1]
				ratios = append(ratios, float64(pair[1])/float64(pair[0]))
				if pairCPU[0] > 0 {
					cpuRatios = append(cpuRatios, float64(pairCPU[1])/float64(pairCPU[0]))
				}
			}
			b.ReportMetric(float64(off.Nanoseconds())/float64(i), "off-ns/run")
			b.ReportMetric(float64(on.Nanoseconds())/float64(i), "on-ns/run")
			b.ReportMetric(100*(float64(on)/float64(off)-1), "overhead-%")
			b.ReportMetric(100*(median(ratios)-1), "overhead-med-%")
			if offCPU > 0 {
				b.ReportMetric(100*(float64(onCPU)/float64(offCPU)-1), "cpu-overhead-%")
				b.ReportMetric(100*(median(cpuRatios)-1), "cpu-overhead-med-%")
			}
		})
		b.Run(p.name+"/allocs-off", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				run(b, false)
			}
		})
		b.Run(p.name+"/allocs-on", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				run(b, true)
			}
		})
	}
}

// median is the middle of v (which it sorts), 1 when v is empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 1
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// turnEnds stands in for the server's metrics tracer, the next of a traced
// run and the tracer of an untraced one: it gets what that one gets, the
// ends of model turns (none in a Lua-only run), in both halves alike.
type turnEnds struct{ events, tokens int }

func (t *turnEnds) Observe(ev engine.TraceEvent) {
	t.events++
	if ev.Info != nil {
		t.tokens += ev.Info.Usage.PromptTokens + ev.Info.Usage.CompletionTokens
	}
}
