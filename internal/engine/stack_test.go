//go:build !race

// Not under -race: the race detector's instrumentation makes every frame
// larger, and the budget below is for the build users run.

package engine

import (
	"context"
	"net/http"
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// turnWaitBudget bounds the bytes of stack between the caller of Run and
// the gateway client's transport during a section's model turn: the
// engine's frames, the gateway client's, and net/http.Client's (about
// 1.2 KB of them). A run goroutine waits for the model below all of
// these, and the collector halves a waiting goroutine's stack only while
// its frames and an 800-byte guard fill less than a quarter of it
// (runtime shrinkstack). Under serve a waiting run's frames are this
// part and about 2.6 KB more (runs' runner and supervisor, the server's
// run closure, its timed transport, net/http.Transport's round trip, the
// runtime's select: 9,008 bytes in all at ff76c6a, where this part was
// 6,375), so while this part stays under about 4,750 bytes the whole stays
// under 7,392 and a run's stack shrinks to 16 KiB instead of staying at
// 32 KiB (docs/benchmarks.md, "The run goroutine's stack"). The budget
// leaves a little for the compiler's variation.
const turnWaitBudget = 4600

// TestTurnWaitFrames holds the frames a run waits in during a model turn
// under turnWaitBudget. It measures them as the distance between a local
// of this test's frame and one of the transport's RoundTrip: the stack is
// grown first and the collector is off, so it does not move in between
// (the test checks that it did not).
func TestTurnWaitFrames(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("said"))
	probe := &depthProbe{base: gateway.NewTransport()}
	c, err := gateway.New(gateway.Options{BaseURL: s.URL(), APIKey: secret.MustNew(s.APIKey()),
		HTTPClient: &http.Client{Transport: probe}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	p := parse(t, "---\nname: speak\ndescription: Say one thing.\npromptforge: 1\n---\n\n# Speak\n\n"+defaultModel+"\n## Say\n\nSay one thing.\n")
	cfg := Options{Client: c, Models: []gateway.Model{testModel}}

	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	growStack(256)
	var mark byte
	probe.top = uintptr(unsafe.Pointer(&mark))
	res, err := runForDepth(p, cfg)
	if uintptr(unsafe.Pointer(&mark)) != probe.top {
		t.Fatal("the test's stack moved during the run: grow it further")
	}
	if err != nil || res.Value != "said" {
		t.Fatalf("run = %q, %v; want said", res.Value, err)
	}
	if probe.depth == 0 {
		t.Fatal("the transport was not called")
	}
	t.Logf("frames from Run to the transport: %d bytes (budget %d)", probe.depth, turnWaitBudget)
	if probe.depth > turnWaitBudget {
		t.Errorf("a model turn waits below %d bytes of frames from Run to the transport, over the %d-byte budget: a run goroutine's stack then stays at 32 KiB instead of shrinking to 16 KiB; move large temporaries out of the frames on that path (see engine newVM, gateway send)",
			probe.depth, turnWaitBudget)
	}
}

//go:noinline
func runForDepth(p *prompt.Prompt, cfg Options) (Result, error) {
	return Run(context.Background(), p, "", nil, cfg)
}

// growStack grows the goroutine's stack to about n KiB and more.
//
//go:noinline
func growStack(n int) byte {
	var buf [1024]byte
	buf[n%len(buf)] = byte(n)
	if n > 0 {
		return growStack(n-1) + buf[n%len(buf)]
	}
	return buf[0]
}

// depthProbe is the real transport, recording how deep below top it was
// called.
type depthProbe struct {
	base  http.RoundTripper
	top   uintptr
	depth int
}

func (p *depthProbe) RoundTrip(req *http.Request) (*http.Response, error) {
	var here byte
	if p.depth == 0 {
		p.depth = int(p.top - uintptr(unsafe.Pointer(&here)))
	}
	return p.base.RoundTrip(req)
}
