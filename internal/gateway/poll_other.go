//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gateway

import "net"

// Elsewhere there is no portable non-blocking peek, so an idle connection
// the server closed would be found only on use, and a POST that met one
// could not be sent again (the server may have read it): a keep-alive
// timeout as short as uvicorn's 5 s would fail the next turn. net/http
// notices such a close while the connection is idle, with its read loop,
// so every request goes to Fallback here.
const canProbe = false

func probeStale(net.Conn) bool { return false }

func waitReadable(net.Conn) error { return nil }
