package transport

import (
	"net/http"
	"strconv"
	"strings"
)

// Cross-origin browser use of /mcp (mcp-server §9.2). A browser lets a page
// of another origin call /mcp only if the server says so (the Fetch
// standard's CORS protocol): it first sends a preflight (OPTIONS with
// Access-Control-Request-Method, without the page's Authorization, so it
// cannot pass the bearer check), and it hands the page a reply, and the
// reply's headers beyond the CORS-safelisted ones, only when the reply
// names the page's origin. So, for an Origin listed in
// [server].allowed_origins and for no other (the server's own origin needs
// no CORS, and "*" would let any site's page use a token it got hold of):
// the preflight is answered before the bearer check, and every /mcp reply
// (401s and other refusals included, so the page can tell what went wrong)
// carries Access-Control-Allow-Origin. The actual request still meets the
// bearer, the Host check, the body deadline and the session cap.

const (
	// corsMaxAge is how long a browser may cache a preflight's answer, in
	// seconds: Chromium's ceiling (Firefox allows a day), so one preflight
	// serves a client's session for up to two hours.
	corsMaxAge = 7200
	// corsMethods are the methods of the streamable HTTP transport.
	corsMethods = "GET, POST, DELETE"
	// corsParamPrefix starts the 2026-07-28 headers a tool's input schema
	// may declare (x-mcp-header, SEP-2243): their names depend on the tool,
	// so a preflight's request for one is granted by the prefix.
	corsParamPrefix = "mcp-param-"
)

// corsHeaders are the request headers an MCP client sends that are not
// CORS-safelisted (Accept and Content-Type are safelisted only for some
// values; application/json is not one): the bearer, the JSON body's type,
// the session and protocol headers of both eras, the resumption header
// and the 2026-07-28 routing headers (Mcp-Method, Mcp-Name; taskheaders.go
// and the SDK's streamable_headers.go read them).
var corsHeaders = []string{"Authorization", "Content-Type", "Accept", headerSessionID, headerProtocolVersion, "Last-Event-ID", "Mcp-Method", headerMcpName}

// corsExposed are the reply headers a browser client must read: the
// session id (stateful era), the protocol version, and the reasons of a
// refusal (the bearer's challenge, the session cap's Retry-After).
const corsExposed = headerSessionID + ", " + headerProtocolVersion + ", WWW-Authenticate, Retry-After"

// listedOrigin reports whether r carries exactly one Origin that is one of
// allowed_origins; the value to echo is the one the browser sent.
func (p originPolicy) listedOrigin(r *http.Request) (string, bool) {
	values := r.Header.Values("Origin")
	if len(values) != 1 || len(p.listed) == 0 {
		return "", false
	}
	o, ok := parseOrigin(values[0])
	return values[0], ok && p.listed[o]
}

// crossOrigin wraps /mcp's guarded handler (bearer, Host and Origin
// checks): a preflight meets the Host and Origin checks only and, from a
// listed origin, is answered 204 with the grants; any other request from a
// listed origin gets its CORS reply headers before next runs, so they are
// on whatever next answers.
func crossOrigin(hosts []authority, origins originPolicy, guarded http.Handler) http.Handler {
	preflight := hostCheck(hosts, origins, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin, ok := origins.listedOrigin(r)
		if !ok {
			// The server's own origin: a browser sends no preflight for
			// it, so this is no browser's; it gets what it always got.
			guarded.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Methods", corsMethods)
		h.Set("Access-Control-Allow-Headers", allowHeaders(r.Header.Values("Access-Control-Request-Headers")))
		h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
		// A public page calling a server on a private or loopback
		// address: Chromium's Private Network Access asks for this too.
		if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
			h.Set("Access-Control-Allow-Private-Network", "true")
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			preflight.ServeHTTP(w, r)
			return
		}
		if len(origins.listed) > 0 {
			// The reply depends on the Origin whenever some are listed.
			w.Header().Add("Vary", "Origin")
		}
		if origin, ok := origins.listedOrigin(r); ok {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Expose-Headers", corsExposed)
		}
		guarded.ServeHTTP(w, r)
	})
}

// allowHeaders is the preflight's Access-Control-Allow-Headers: the
// headers an MCP client sends, and those of the requested headers that are
// Mcp-Param-* ones. Other requested headers are left out, so the browser
// refuses the request rather than the server ignoring them.
func allowHeaders(requested []string) string {
	out := append([]string(nil), corsHeaders...)
	for _, line := range requested {
		for name := range strings.SplitSeq(line, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if strings.HasPrefix(name, corsParamPrefix) && len(name) > len(corsParamPrefix) && isToken(name) {
				out = append(out, name)
			}
		}
	}
	return strings.Join(out, ", ")
}

// isToken reports whether s is an RFC 9110 token (a header name), so a
// requested name is echoed only when it cannot smuggle anything else in.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
