package tools

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Policy is what web_fetch may do (gateway-picker-webfetch §3.11). Start from
// [DefaultPolicy] and change fields; [NewWebFetch] validates the result. The
// zero value is not usable: a zero MaxRedirects is a legitimate setting
// ("follow no redirect"), so zero cannot also mean "default".
type Policy struct {
	// AllowHTTP admits plain http URLs (https is always admitted).
	AllowHTTP bool
	// AllowPorts are the ports a URL may name, explicitly or by scheme
	// default.
	AllowPorts []uint16
	// AllowIPLiterals admits URLs whose host is an IP address. Blocked
	// ranges are refused even then.
	AllowIPLiterals bool
	// DenyCIDRs are ranges refused on top of the built-in table (also
	// checked against IPv4 addresses embedded in IPv6 forms).
	DenyCIDRs []netip.Prefix
	// AllowHostAddresses are exact (host, address) pairs admitted despite
	// the table: the only escape hatch, with no ranges and no host-only
	// or address-only form.
	AllowHostAddresses []HostAddress
	// MaxRedirects is how many redirects one fetch follows (0..20).
	MaxRedirects int
	// MaxBytes caps the decompressed body (1 byte..64 MiB).
	MaxBytes int64
	// MaxChars caps the returned text and is the schema's max_chars
	// ceiling (1..10,000,000).
	MaxChars int
	// ConnectTimeout bounds one TCP connect (0 < t <= 60s).
	ConnectTimeout time.Duration
	// Timeout bounds the whole fetch, redirects and body read included
	// (0 < t <= 300s).
	Timeout time.Duration
	// PoolIdleTimeout is how long an idle keep-alive connection is kept
	// (0 < t <= 600s). A reused connection skips the address check, so
	// this bounds how long a rebinding answer could go unnoticed.
	PoolIdleTimeout time.Duration
	// UserAgent is sent on every request.
	UserAgent string
}

// HostAddress is one allow_host_address exception.
type HostAddress struct {
	Host string
	Addr netip.Addr
}

// Limits of the policy knobs.
const (
	DefaultMaxChars     = 40_000
	DefaultMaxBytes     = 8 << 20
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "promptforge-webfetch/0.0"

	maxRedirectsCeiling    = 20
	maxBytesCeiling        = 64 << 20
	maxCharsCeiling        = 10_000_000
	connectTimeoutCeiling  = 60 * time.Second
	timeoutCeiling         = 300 * time.Second
	poolIdleTimeoutCeiling = 600 * time.Second
)

// DefaultPolicy is the policy every host uses: https only, ports 80 and
// 443, no IP literals, no exceptions.
func DefaultPolicy() Policy {
	return Policy{
		AllowPorts:      []uint16{80, 443},
		MaxRedirects:    DefaultMaxRedirects,
		MaxBytes:        DefaultMaxBytes,
		MaxChars:        DefaultMaxChars,
		ConnectTimeout:  5 * time.Second,
		Timeout:         20 * time.Second,
		PoolIdleTimeout: 10 * time.Second,
		UserAgent:       DefaultUserAgent,
	}
}

// DenyCIDR parses cidr (e.g. "93.184.0.0/16") and adds it to DenyCIDRs.
func (p *Policy) DenyCIDR(cidr string) error {
	pfx, err := netip.ParsePrefix(strings.TrimSpace(cidr))
	if err != nil {
		return fmt.Errorf("deny_cidr %q is not a CIDR range (want e.g. 10.1.0.0/16 or fd00::/8): %w", cidr, err)
	}
	p.DenyCIDRs = append(p.DenyCIDRs, pfx)
	return nil
}

// AllowHostAddress parses addr and adds the exact (host, addr) exception.
func (p *Policy) AllowHostAddress(host, addr string) error {
	a, err := netip.ParseAddr(strings.TrimSpace(addr))
	if err != nil {
		return fmt.Errorf("allow_host_address %q: %q is not an IP address: %w", host, addr, err)
	}
	h, err := canonicalExceptionHost(host)
	if err != nil {
		return err
	}
	p.AllowHostAddresses = append(p.AllowHostAddresses, HostAddress{Host: h, Addr: a})
	return nil
}

// Validate reports the first knob that is out of range, naming it.
func (p Policy) Validate() error {
	_, err := p.normalized()
	return err
}

// normalized validates p and returns a copy with lists deduplicated and
// canonicalized, sharing no slices with p.
func (p Policy) normalized() (Policy, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if len(p.AllowPorts) == 0 {
		bad("allow_ports must list at least one port (the default is [80, 443])")
	}
	ports := slices.Clone(p.AllowPorts)
	if slices.Contains(ports, 0) {
		bad("allow_ports must not contain 0")
	}
	slices.Sort(ports)
	ports = slices.Compact(ports)

	var cidrs []netip.Prefix
	for _, c := range p.DenyCIDRs {
		if !c.IsValid() {
			bad("deny_cidr %v is not a valid CIDR range", c)
			continue
		}
		c = c.Masked()
		if !slices.Contains(cidrs, c) {
			cidrs = append(cidrs, c)
		}
	}

	var hosts []HostAddress
	for _, ha := range p.AllowHostAddresses {
		h, err := canonicalExceptionHost(ha.Host)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ha.Addr.IsValid() || ha.Addr.Zone() != "" {
			bad("allow_host_address %q: the address must be a valid IP address without a zone", ha.Host)
			continue
		}
		e := HostAddress{Host: h, Addr: ha.Addr}
		if !slices.Contains(hosts, e) {
			hosts = append(hosts, e)
		}
	}

	if p.MaxRedirects < 0 || p.MaxRedirects > maxRedirectsCeiling {
		bad("max_redirects must be between 0 and %d, got %d", maxRedirectsCeiling, p.MaxRedirects)
	}
	if p.MaxBytes < 1 || p.MaxBytes > maxBytesCeiling {
		bad("max_bytes must be between 1 and %d (64 MiB), got %d", maxBytesCeiling, p.MaxBytes)
	}
	if p.MaxChars < 1 || p.MaxChars > maxCharsCeiling {
		bad("max_chars must be between 1 and %d, got %d", maxCharsCeiling, p.MaxChars)
	}
	durations := []struct {
		name    string
		v, ceil time.Duration
	}{
		{"connect_timeout", p.ConnectTimeout, connectTimeoutCeiling},
		{"timeout", p.Timeout, timeoutCeiling},
		{"pool_idle_timeout", p.PoolIdleTimeout, poolIdleTimeoutCeiling},
	}
	for _, d := range durations {
		if d.v <= 0 || d.v > d.ceil {
			bad("%s must be above 0 and at most %v, got %v", d.name, d.ceil, d.v)
		}
	}
	if p.UserAgent == "" || !httpguts.ValidHeaderFieldValue(p.UserAgent) {
		bad("user_agent must be a non-empty valid HTTP header value (no control characters such as newlines), got %q", p.UserAgent)
	}
	if len(errs) > 0 {
		return Policy{}, fmt.Errorf("web_fetch policy: %w", errors.Join(errs...))
	}
	p.AllowPorts, p.DenyCIDRs, p.AllowHostAddresses = ports, cidrs, hosts
	return p, nil
}

// exceptionKey canonicalizes a host for exception lookups: trimmed,
// without a trailing dot, ASCII lower-case.
func exceptionKey(host string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(host), "."))
}

// canonicalExceptionHost validates an allow_host_address host and returns
// its lookup key. The host must be what a URL can name: the same parser
// that admits URLs must accept it, so an exception can never name a host
// no fetch could match.
func canonicalExceptionHost(host string) (string, error) {
	key := exceptionKey(host)
	h, err := parseHost(newIDNAProfile(), key)
	if err != nil {
		return "", fmt.Errorf("allow_host_address host %q is not a valid host name or IP address", host)
	}
	return exceptionKey(h.name), nil
}
