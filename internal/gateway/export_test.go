package gateway

import "bytes"

// PoolUnprobed makes tr keep idle connections it cannot probe for a close
// (net.Pipe ones, for tests on synctest's clock).
func PoolUnprobed(tr *Transport) { tr.poolUnprobed = true }

// DirectPath reports whether this platform has the direct path (see
// poll_other.go): elsewhere every request goes to net/http.
const DirectPath = canProbe

// TakeWriteBuffer takes a request buffer from tr's pool as the direct
// path does (a fresh one, of no capacity, when the pool is empty).
func TakeWriteBuffer(tr *Transport) *bytes.Buffer { return tr.writeBuffer() }
