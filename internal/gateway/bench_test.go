package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// The two benchmarks make the same round trip against the same gatewaytest
// server; BenchmarkComplete minus BenchmarkLoopbackFloor is the client's
// own cost (encoding, validation, parsing).

func benchServer(b *testing.B) *gatewaytest.Server {
	s := gatewaytest.New(b)
	reply := gatewaytest.Text("The capital of France is Paris.")
	s.Respond(func(gatewaytest.Request) gatewaytest.Reply { return reply })
	return s
}

func benchRequest() gateway.ChatRequest {
	return gateway.ChatRequest{
		Model: "test-model",
		Messages: []gateway.Message{
			{Role: "system", Content: "Answer in one sentence."},
			{Role: "user", Content: "What is the capital of France?"},
		},
	}
}

func BenchmarkComplete(b *testing.B) {
	s := benchServer(b)
	c := newClient(b, s)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoopbackFloor(b *testing.B) {
	s := benchServer(b)
	c := newClient(b, s)
	comp, err := c.Complete(b.Context(), benchRequest())
	if err != nil {
		b.Fatal(err)
	}
	body := comp.RequestJSON
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	b.Cleanup(hc.CloseIdleConnections)
	url, auth := s.URL()+"/chat/completions", "Bearer "+s.APIKey()
	b.ReportAllocs()
	for b.Loop() {
		req, err := http.NewRequestWithContext(b.Context(), "POST", url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("status %d, %v", resp.StatusCode, err)
		}
	}
}

// BenchmarkTurnInFlight sends 8 turns at once and holds them at the
// gateway until all are in flight, counts the client's goroutines then
// (the callers' included: net/http adds a connection's read and write
// loops per turn in flight), and lets them finish: allocations, bytes and
// goroutines per turn, of whatever transport New builds.
func BenchmarkTurnInFlight(b *testing.B) {
	const turns = 8
	s := gatewaytest.New(b)
	c := newClient(b, s)
	req := benchRequest()
	b.ReportAllocs()
	counted := 0
	for b.Loop() {
		gate := gatewaytest.NewGate()
		s.Respond(func(gatewaytest.Request) gatewaytest.Reply {
			return gatewaytest.Gated(gate, gatewaytest.Text("The capital of France is Paris."))
		})
		done := make(chan error, turns)
		for range turns {
			go func() {
				_, err := c.Complete(b.Context(), req)
				done <- err
			}()
		}
		<-gate.ArrivedN(turns)
		b.StopTimer()
		counted += len(clientGoroutines())
		b.StartTimer()
		gate.Release()
		for range turns {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(counted)/float64(b.N*turns), "goroutines/turn")
}

// clientGoroutines returns the ids of the goroutines running the gateway
// client or net/http's client transport (ids, so that one of an earlier
// test ending meanwhile does not count).
func clientGoroutines() map[string]bool {
	buf := make([]byte, 1<<20)
	ids := map[string]bool{}
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "gateway.(*Client).Complete") || strings.Contains(g, "net/http.(*persistConn)") {
			id, _, _ := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
			ids[id] = true
		}
	}
	return ids
}
