package transport

import (
	"encoding/json"
	"net/http"
)

const (
	// protocolStateless is the first protocol revision without sessions
	// (no initialize, per-request _meta, server/discover).
	protocolStateless = "2026-07-28"
	// metaProtocolVersion is the per-request _meta key a 2026-07-28
	// request carries its protocol version in.
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	methodDiscover      = "server/discover"
)

// byEra sends each /mcp request to the handler of its protocol era:
// stateless (2026-07-28 and later) or stateful (2025-11-25 and earlier).
//
// go-sdk v1.8.0 serves one era per StreamableHTTPHandler: a stateful
// handler refuses every request at 2026-07-28 (mcp/streamable.go,
// streamableServerConn.servePOST: "this server is stateful; set
// StreamableHTTPOptions.Stateless = true"), and a stateless one
// (StreamableHTTPOptions.Stateless) gives each POST a throwaway session, so
// an older client would lose what the stateful era is for: its session,
// the cancellation of a call by notifications/cancelled on another POST,
// the standalone GET stream and DELETE. So the same /mcp runs both
// handlers and this picks one per request, before either reads it:
//
//   - a request carrying an Mcp-Session-Id is stateful: only that era has
//     sessions, and the stateful handler answers an unknown or expired one;
//   - otherwise a request whose Mcp-Protocol-Version header is 2026-07-28 or
//     later is stateless;
//   - otherwise a POST whose body declares the new era (server/discover, or
//     a request with _meta's protocol version) is stateless, so the
//     stateless handler can answer a missing header with the protocol's own
//     header-mismatch error rather than the stateful refusal;
//   - everything else (initialize, the legacy era's requests) is stateful.
//
// Each client so gets the newest version it asks for: a 2026-07-28 client
// starts with server/discover, which the stateless handler answers; an
// older client starts with initialize. The checks in front (bearer, Host,
// Origin) apply to both, since byEra sits behind them.
func byEra(stateful, stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(headerSessionID) != "" {
			stateful.ServeHTTP(w, r)
			return
		}
		if v := r.Header.Get(headerProtocolVersion); v != "" {
			if v >= protocolStateless {
				stateless.ServeHTTP(w, r)
			} else {
				stateful.ServeHTTP(w, r)
			}
			return
		}
		v, ok := postView(w, r, stateful)
		if !ok {
			return
		}
		if declaresStateless(v.messages()) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// declaresStateless reports whether an MCP POST body's messages (one
// message or a batch) hold a server/discover or a request whose _meta
// names a protocol version of the stateless era.
func declaresStateless(msgs []message) bool {
	for _, m := range msgs {
		if m.Method == methodDiscover {
			return true
		}
		// Maps, not structs: names exact, as the SDK reads them.
		var params, meta map[string]json.RawMessage
		if json.Unmarshal(m.Params, &params) != nil || json.Unmarshal(params["_meta"], &meta) != nil {
			continue
		}
		var v string
		if json.Unmarshal(meta[metaProtocolVersion], &v) == nil && v >= protocolStateless {
			return true
		}
	}
	return false
}
