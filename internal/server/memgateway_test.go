package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// memGateway is a gated chat-completions endpoint served over an in-memory
// network, for tests on testing/synctest's fake clock. gatewaytest listens
// on real TCP, and a goroutine waiting on a socket is not durably blocked,
// so a bubble could never advance its clock while a run waits at that
// gateway. Here every wait is on a channel or a net.Pipe, and the client
// is still the real gateway.Client speaking real HTTP.
//
// Every chat request reports its arrival on arrived and is answered
// "eventually" once release is closed; a request whose client gives up is
// dropped.
type memGateway struct {
	ln      *servertest.PipeListener
	srv     *http.Server
	tr      *http.Transport
	client  *gateway.Client
	arrived chan struct{} // one token per arrival
	served  chan struct{}

	mu      sync.Mutex
	release chan struct{} // the gate requests wait on; gate replaces it
}

func newMemGateway(t testing.TB) *memGateway {
	t.Helper()
	g := &memGateway{
		ln:      servertest.NewPipeListener(),
		arrived: make(chan struct{}, 1024),
		release: make(chan struct{}),
		served:  make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", g.chat)
	g.srv = &http.Server{Handler: mux}
	go func() {
		defer close(g.served)
		g.srv.Serve(g.ln)
	}()
	g.tr = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return g.ln.Dial(ctx) }}
	var err error
	g.client, err = gateway.New(gateway.Options{BaseURL: "http://gateway.test/v1", APIKey: secret.MustNew("mem-key"), HTTPClient: &http.Client{Transport: g.tr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.close)
	return g
}

// Release answers every held request and every later one (until gate).
func (g *memGateway) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// gate holds the requests that arrive from now on until ch is closed (or
// Release is called), for a benchmark that holds runs again and again.
func (g *memGateway) gate(ch chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.release = ch
}

func (g *memGateway) close() {
	g.Release()
	g.tr.CloseIdleConnections()
	g.srv.Close()
	<-g.served
}

func (g *memGateway) chat(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	release := g.release
	g.mu.Unlock()
	g.arrived <- struct{}{}
	select {
	case <-release:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"id":"x","object":"chat.completion","created":0,"model":"test-model","choices":[{"index":0,"message":{"role":"assistant","content":"eventually"},"finish_reason":"stop"}]}`))
}
