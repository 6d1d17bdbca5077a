package tools

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"github.com/promptforge-go/promptforge/internal/redact"
)

// failure is a web_fetch outcome other than success. Soft failures go
// back to the model as tool text so it can try another URL; hard ones end
// the run as a KindInvalidArguments error. model is what the model (or the
// run's error) shows: never a blocked address, query or credential.
// detail is for logs only.
type failure struct {
	hard   bool
	model  string
	detail string
	cause  error
}

func (f *failure) Error() string { return f.model }

func (f *failure) Unwrap() error { return f.cause }

func soft(model, detail string, cause error) *failure {
	return &failure{model: model, detail: detail, cause: cause}
}

func hard(model, detail string) *failure {
	return &failure{hard: true, model: model, detail: detail}
}

// admitter runs URL admission (gateway-picker-webfetch §3.3) before any
// network activity, for the requested URL and again for every redirect
// target.
type admitter struct {
	allowHTTP       bool
	allowIPLiterals bool
	ports           []uint16
	addrs           *addressPolicy
	profile         *idna.Profile
}

// target is an admitted URL in canonical form: scheme and host
// lower-case, IDNA applied, any IPv4 notation rewritten as dotted
// decimal, default port dropped, fragment removed, query untouched.
type target struct {
	u    *url.URL
	host parsedHost
	port uint16
}

// admit parses raw and applies the policy. Checks run in the order the
// spec gives, so a URL that is wrong in several ways reports the first.
func (a *admitter) admit(raw string) (*target, *failure) {
	u, err := url.Parse(whatwgTrim(raw))
	if err != nil {
		return nil, hard("invalid url", "url does not parse")
	}
	return a.admitParsed(u)
}

func (a *admitter) admitParsed(u *url.URL) (*target, *failure) {
	if u.Scheme == "" {
		return nil, hard("invalid url", "url is not absolute (no scheme)")
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme == "https":
	case scheme == "http" && a.allowHTTP:
	default:
		return nil, soft("scheme not allowed: "+redact.Text(scheme, 40), "scheme refused by policy", nil)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, hard("invalid url", "url has no host")
	}
	if u.User != nil {
		return nil, hard("url must not contain userinfo", "userinfo present")
	}

	port := uint16(443)
	if scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil, hard("invalid url", "port out of range")
		}
		port = uint16(n)
	}
	if !slices.Contains(a.ports, port) {
		return nil, hard("port not allowed: "+strconv.Itoa(int(port)), "port refused by policy")
	}

	hostPart := u.Host
	if i := strings.LastIndexByte(hostPart, ':'); i >= 0 && !strings.HasSuffix(hostPart, "]") {
		hostPart = hostPart[:i]
	}
	h, err := parseHost(a.profile, hostPart)
	if err != nil {
		return nil, hard("invalid url", "host is not a valid domain or IP address")
	}
	if h.kind != hostName {
		if !a.allowIPLiterals {
			return nil, hard("ip literal host not allowed: "+h.name, "ip literal refused by policy")
		}
		if why, ok := a.addrs.allowed(h.name, h.ip); !ok {
			return nil, hard("host "+h.urlString()+" is not fetchable", "address "+h.ip.String()+" is in blocked range "+why)
		}
	}

	c := *u
	c.Scheme = scheme
	c.Host = h.urlString()
	if (scheme == "https" && port != 443) || (scheme == "http" && port != 80) {
		c.Host += ":" + strconv.Itoa(int(port))
	}
	c.Fragment, c.RawFragment = "", ""
	if c.Path == "" {
		c.Path = "/"
	}
	return &target{u: &c, host: h, port: port}, nil
}

// whatwgTrim does the URL Standard's input cleanup: leading and trailing
// C0 controls and spaces are stripped, and tabs and newlines anywhere are
// removed.
func whatwgTrim(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= 0x20 })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
	}
	return s
}
