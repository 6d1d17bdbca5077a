package servertest

import (
	"context"
	"errors"
	"net"
	"sync"
)

// PipeListener hands the server ends of net.Pipe pairs to Accept, so a
// whole HTTP exchange, deadlines included, runs inside a synctest bubble
// on the fake clock (loopback sockets do not block durably; pipes do).
// Dial gives the client ends.
type PipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewPipeListener returns a listener with no connection yet.
func NewPipeListener() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Dial connects a client end, once Accept has taken the server end.
func (l *PipeListener) Dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, errors.New("the pipe listener is closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept waits for a Dial or Close.
func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close ends Accept; it may be called more than once.
func (l *PipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is a loopback-looking address, for code that prints it.
func (l *PipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
