package gateway

// PoolUnprobed makes tr keep idle connections it cannot probe for a close
// (net.Pipe ones, for tests on synctest's clock).
func PoolUnprobed(tr *Transport) { tr.poolUnprobed = true }

// DirectPath reports whether this platform has the direct path (see
// poll_other.go): elsewhere every request goes to net/http.
const DirectPath = canProbe
