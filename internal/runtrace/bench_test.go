package runtrace

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/secret"
)

const benchHeader = "---\nname: t\ndescription: A test prompt.\npromptforge: 1\n---\n"

// BenchmarkTracing compares a run without a tracer (traces off) with the
// same run traced as the server traces it: a recorder from a book, content
// capture off, finished into the book. Off and on of each prompt run side
// by side in one go test run (the target is at most 5 % more with traces).
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

	book := NewBook(Options{}, time.Hour, 1000)
	// traced and finish bracket a traced run as the server's run body
	// does; finish is made once, not per run, so that the traced half
	// does not pay for a closure the server does not make.
	traced := func() engine.Options {
		on := cfg
		on.Tracer = book.Start("run", "t")
		return on
	}
	finish := func(res engine.Result) {
		book.Finish("run", "completed", "", res.Turns, Tokens{res.Tokens.PromptTokens, res.Tokens.CompletionTokens})
	}
	for _, p := range []struct {
		name string
		p    *prompt.Prompt
		want string
	}{{"lua", lua, "hello world"}, {"turn", turn, "hello"}} {
		run := func(b *testing.B, opts engine.Options) engine.Result {
			res, err := engine.Run(context.Background(), p.p, "world", nil, opts)
			if err != nil || res.Value != p.want {
				b.Fatal(res, err)
			}
			return res
		}
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
			i := 0
			for b.Loop() {
				i++
				for k := range 2 {
					start, startCPU := time.Now(), threadCPU()
					if (i+k)%2 == 0 {
						run(b, cfg)
						off += time.Since(start)
						offCPU += threadCPU() - startCPU
						continue
					}
					finish(run(b, traced()))
					on += time.Since(start)
					onCPU += threadCPU() - startCPU
				}
			}
			b.ReportMetric(float64(off.Nanoseconds())/float64(i), "off-ns/run")
			b.ReportMetric(float64(on.Nanoseconds())/float64(i), "on-ns/run")
			b.ReportMetric(100*(float64(on)/float64(off)-1), "overhead-%")
			if offCPU > 0 {
				b.ReportMetric(100*(float64(onCPU)/float64(offCPU)-1), "cpu-overhead-%")
			}
		})
		b.Run(p.name+"/allocs-off", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				run(b, cfg)
			}
		})
		b.Run(p.name+"/allocs-on", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				finish(run(b, traced()))
			}
		})
	}
}
