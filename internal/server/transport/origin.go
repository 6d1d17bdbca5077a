package transport

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// origin is a browser Origin reduced to what identifies it: scheme, host
// (lowercase, IPv6 without brackets) and the port, the scheme's default
// when the Origin names none.
type origin struct{ scheme, host, port string }

func (o origin) String() string {
	h := o.host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return o.scheme + "://" + h + ":" + o.port
}

// parseOrigin reads an Origin as RFC 6454 serializes one: an http or https
// scheme, a host and an optional port, nothing else. "null" (a sandboxed
// frame, a file page, a redirect across origins), userinfo, a path, a
// query or a fragment are not an origin a browser sends for a page that
// could be ours, so they do not parse.
func parseOrigin(s string) (origin, bool) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.User != nil || u.Opaque != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" ||
		(u.Path != "" && u.Path != "/") {
		return origin{}, false
	}
	scheme := strings.ToLower(u.Scheme)
	def := map[string]string{"http": "80", "https": "443"}[scheme]
	if def == "" {
		return origin{}, false
	}
	a, ok := parseAuthority(u.Host)
	if !ok {
		return origin{}, false
	}
	if a.port == "" {
		a.port = def
	}
	return origin{scheme, a.host, strings.TrimLeft(a.port, "0")}, true
}

// originPolicy is the transport spec's Origin rule (both eras: "Servers
// MUST validate the Origin header"; mcp-server §9.2). Clients that are not
// browsers send no Origin and are not affected.
type originPolicy struct {
	// listed are [server].allowed_origins, normalized: origins allowed
	// besides the server's own.
	listed map[origin]bool
}

// CheckAllowedOrigins refuses an [server].allowed_origins entry that is not
// an origin, as HTTPHandler would, so a command can report it before
// serving.
func CheckAllowedOrigins(entries []string) error {
	_, err := parseAllowedOrigins(entries)
	return err
}

func parseAllowedOrigins(entries []string) (originPolicy, error) {
	p := originPolicy{}
	for _, e := range entries {
		o, ok := parseOrigin(e)
		if !ok {
			return originPolicy{}, fmt.Errorf("[server].allowed_origins entry %q is not an origin: write scheme://host or scheme://host:port, with http or https and no path", e)
		}
		if p.listed == nil {
			p.listed = map[origin]bool{}
		}
		p.listed[o] = true
	}
	return p, nil
}

// allows reports whether r's Origin (if any) may drive the server; host is
// r's Host, already checked against the allowed hosts. A page may be one
// listed in allowed_origins or one served by this server: the same host as
// the request's and the port the request came to (the Host's port, or the
// scheme's default when the Host names none, as behind a proxy on 443).
// So a page on another port of an allowed name (another local app) is
// refused, and a page of another site is refused whatever Host it
// rebinds. The server's own origin stays allowed when others are listed:
// its status page's login form is posted from it, and a page this server
// served is no less trusted for the operator having listed another.
func (p originPolicy) allows(host authority, r *http.Request) bool {
	values := r.Header.Values("Origin")
	switch {
	case len(values) == 0:
		return true
	case len(values) > 1:
		return false
	}
	o, ok := parseOrigin(values[0])
	if !ok {
		return false
	}
	if p.listed[o] {
		return true
	}
	want := strings.TrimLeft(host.port, "0")
	if host.port == "" {
		want = map[string]string{"http": "80", "https": "443"}[o.scheme]
	}
	return o.host == host.host && o.port == want
}
