//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gateway

import (
	"net"
	"syscall"
)

// canProbe: probeStale can see a close while the connection was idle.
const canProbe = true

// readable looks at the connection's socket without consuming or
// waiting: true when a read would not block (bytes, the peer's close, or
// a socket error, which the read then reports).
func readable(fd uintptr) bool {
	var b [1]byte
	for {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		return true
	}
}

// probeStale reports whether an idle connection must not be used: the
// server closed it while it was idle, or sent bytes nobody asked for.
// net/http learns the same from the read loop it keeps on every idle
// connection; one non-blocking peek when the connection is taken does it
// without a goroutine.
func probeStale(c net.Conn) bool {
	rc := rawConn(c)
	if rc == nil {
		return false
	}
	stale := false
	err := rc.Read(func(fd uintptr) bool {
		stale = readable(fd)
		return true
	})
	return err != nil || stale
}

// waitReadable waits until the reply starts to arrive (or the peer closes,
// or the deadline passes), so the bufio.Reader it is read through is taken
// only then: a run waiting on the model holds no read buffer. The first
// call of f must look at the socket rather than wait: RawConn.Read clears
// the poller's readiness before calling it, so a reply that arrived
// before the wait began would otherwise never wake it.
func waitReadable(c net.Conn) error {
	rc := rawConn(c)
	if rc == nil {
		return nil
	}
	return rc.Read(readable)
}
