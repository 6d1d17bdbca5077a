package gatewaytest

import (
	"context"
	"sync"
)

// A Gate holds gated requests at the server until Release. It lets a test
// observe a request while it is in flight (Arrived, ArrivedN, Waiting)
// without sleeping.
type Gate struct {
	released    chan struct{}
	releaseOnce sync.Once

	mu       sync.Mutex
	arrivals int
	waiting  int
	watchers []arrivalWatch
}

type arrivalWatch struct {
	n  int
	ch chan struct{}
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{released: make(chan struct{})}
}

// Release opens the gate for every request waiting now and every later
// one. It is safe to call more than once.
func (g *Gate) Release() {
	g.releaseOnce.Do(func() { close(g.released) })
}

// Arrived is closed when the first request reaches the gate.
func (g *Gate) Arrived() <-chan struct{} { return g.ArrivedN(1) }

// ArrivedN is closed once n requests in total have reached the gate.
func (g *Gate) ArrivedN(n int) <-chan struct{} {
	ch := make(chan struct{})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.arrivals >= n {
		close(ch)
		return ch
	}
	g.watchers = append(g.watchers, arrivalWatch{n: n, ch: ch})
	return ch
}

// Waiting is the number of requests held at the gate right now.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

// wait blocks until the gate opens (true) or the request or server ends
// first (false).
func (g *Gate) wait(ctx context.Context, serverDone <-chan struct{}) bool {
	g.mu.Lock()
	g.arrivals++
	g.waiting++
	kept := g.watchers[:0]
	for _, w := range g.watchers {
		if g.arrivals >= w.n {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	g.watchers = kept
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	select {
	case <-g.released:
		return true
	case <-ctx.Done():
		return false
	case <-serverDone:
		return false
	}
}
