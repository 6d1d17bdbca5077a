//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gateway

import "net"

// Elsewhere there is no portable non-blocking peek: an idle connection
// the server closed is found on use (and the request sent again by
// roundTrip's rule), and the read buffer is taken as soon as the request
// is written.

func probeStale(net.Conn) bool { return false }

func waitReadable(net.Conn) error { return nil }
