package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"golang.org/x/net/idna"
)

// Resolver looks up a host's addresses. *net.Resolver satisfies it; tests
// inject one they control.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DialFunc opens a connection to address ("ip:port"). web_fetch only ever
// calls it with an IP address that passed the policy.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// guardedDialer is the transport's DialContext. Every new connection,
// for the first request and for every redirect hop, resolves the host
// afresh, keeps only the addresses allowed for that host, and dials
// those. There is no cache between lookups, so a name that answers a
// public address and then a private one (DNS rebinding) is refused the
// second time; and because the check runs on the address actually dialled,
// no URL spelling can reach a blocked address.
type guardedDialer struct {
	resolver        Resolver
	dial            DialFunc
	connectTimeout  time.Duration
	addrs           *addressPolicy
	allowIPLiterals bool
	ports           []uint16
	profile         *idna.Profile
	log             *slog.Logger
}

func (g *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	rawHost, rawPort, err := net.SplitHostPort(address)
	if err != nil {
		return nil, hard("invalid url", "dial address "+strconv.Quote(address)+" does not split into host and port")
	}
	port, err := strconv.ParseUint(rawPort, 10, 16)
	if err != nil || !slices.Contains(g.ports, uint16(port)) {
		return nil, hard("port not allowed: "+rawPort, "dial port refused by policy")
	}
	h, err := parseHost(g.profile, rawHost)
	if err != nil {
		return nil, hard("invalid url", "dial host does not parse")
	}

	var candidates []netip.Addr
	if h.kind == hostName {
		answers, err := g.resolver.LookupIPAddr(ctx, h.name)
		if err != nil || len(answers) == 0 {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err == nil {
				err = errors.New("no addresses")
			}
			g.log.Info("web_fetch: dns lookup failed", "host", h.name, "error", err)
			return nil, soft("dns resolution failed for "+h.name+"; check the host name or try a different URL", "lookup: "+err.Error(), err)
		}
		for _, ans := range answers {
			a, ok := netip.AddrFromSlice(ans.IP)
			if !ok {
				continue
			}
			// A resolver's IPv4 answer comes back 16 bytes long; classify
			// and dial it as the IPv4 address it is.
			candidates = append(candidates, a.Unmap())
		}
	} else {
		if !g.allowIPLiterals {
			return nil, hard("ip literal host not allowed: "+h.name, "dial of ip literal refused by policy")
		}
		candidates = []netip.Addr{h.ip}
	}

	var allowed []netip.Addr
	for _, a := range candidates {
		why, ok := g.addrs.allowed(h.name, a)
		if ok {
			if !slices.Contains(allowed, a) {
				allowed = append(allowed, a)
			}
			continue
		}
		g.log.Warn("web_fetch: refused a blocked address", "host", h.name, "address", a.String(), "range", why)
	}
	if len(allowed) == 0 {
		if h.kind != hostName {
			return nil, hard("host "+h.urlString()+" is not fetchable", fmt.Sprintf("address %s is blocked", h.ip))
		}
		return nil, hard("host "+h.name+" has no allowed address", fmt.Sprintf("every address of %s is blocked: %v", h.name, candidates))
	}

	var last error
	for _, a := range allowed {
		conn, err := g.dialOne(ctx, network, netip.AddrPortFrom(a, uint16(port)))
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		last = err
	}
	return nil, last
}

func (g *guardedDialer) dialOne(ctx context.Context, network string, ap netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, g.connectTimeout)
	defer cancel()
	switch network {
	case "tcp", "tcp4", "tcp6":
		network = "tcp4"
		if ap.Addr().Is6() {
			network = "tcp6"
		}
	}
	conn, err := g.dial(ctx, network, ap.String())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", ap, err)
	}
	return conn, nil
}
