package gateway_test

import (
	"bytes"
	"io"
	"net/http"
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
