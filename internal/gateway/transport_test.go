package gateway_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// A server running many model turns at once reuses its connections: after
// a first wave of turns all in flight together, a second wave of as many
// dials nothing. With fewer idle places than turns (64 per host, and the
// default transport's 100 over all hosts), the turns that ended while the
// pool was full closed their connections, and the next wave dialled again.
func TestTransportKeepsAConnectionPerRun(t *testing.T) {
	const runs = 150 // above both old caps
	g := gatewaytest.New(t)
	tr := gateway.NewTransportFor(runs)
	defer tr.CloseIdleConnections()
	var dials atomic.Int64
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey()), HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	wave := func() {
		// Every turn is held at the gate until all have arrived, so all
		// are in flight at once, each on its own connection.
		gate := gatewaytest.NewGate()
		g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Gated(gate, gatewaytest.Text("ok")) })
		var wg sync.WaitGroup
		errs := make([]error, runs)
		for i := range runs {
			wg.Go(func() {
				_, errs[i] = c.Complete(context.Background(), gateway.ChatRequest{Model: "m", Messages: []gateway.Message{{Role: "user", Content: "hi"}}})
			})
		}
		<-gate.ArrivedN(runs)
		gate.Release()
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	wave()
	if n := dials.Load(); n != runs {
		t.Fatalf("the first wave dialled %d connections, want %d (one per turn in flight)", n, runs)
	}
	wave()
	if n := dials.Load() - runs; n != 0 {
		t.Errorf("the second wave dialled %d new connections; every turn should have found an idle one", n)
	}
}

// The transport's buffers are small: a connection keeps them for its life,
// one connection per run in flight.
func TestTransportBuffers(t *testing.T) {
	tr := gateway.NewTransportFor(0)
	defer tr.CloseIdleConnections()
	fb := tr.Fallback
	if fb.ReadBufferSize != 1<<10 || fb.WriteBufferSize != 1<<10 || fb.MaxIdleConnsPerHost != 64 || tr.MaxIdleConnsPerHost != 64 {
		t.Errorf("buffers %d/%d, idle per host %d/%d; want 1024/1024 and 64", fb.ReadBufferSize, fb.WriteBufferSize, fb.MaxIdleConnsPerHost, tr.MaxIdleConnsPerHost)
	}
}
