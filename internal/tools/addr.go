package tools

import (
	"net/netip"
)

// blockedRange is one entry of the built-in table of address classes
// web_fetch never connects to (gateway-picker-webfetch §3.4): everything that
// is not global unicast, plus the IPv6 forms that smuggle an IPv4 address.
type blockedRange struct {
	prefix netip.Prefix
	name   string
}

// blockedRanges returns the built-in table. It is a function rather than
// a package variable so nothing can append to it at run time.
func blockedRanges() []blockedRange {
	table := []struct{ cidr, name string }{
		{"0.0.0.0/8", "this network"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared address space (CGNAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (incl. cloud metadata)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation (TEST-NET-1)"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation (TEST-NET-2)"},
		{"203.0.113.0/24", "documentation (TEST-NET-3)"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"255.255.255.255/32", "limited broadcast"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible"},
		{"::ffff:0:0/96", "IPv4-mapped"},
		{"64:ff9b::/96", "NAT64"},
		{"64:ff9b:1::/48", "local-use NAT64"},
		{"100::/64", "discard-only"},
		{"2001:db8::/32", "documentation"},
		{"2002::/16", "6to4"},
		{"3fff::/20", "documentation"},
		{"fc00::/7", "unique local"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local (deprecated)"},
		{"ff00::/8", "multicast"},
	}
	out := make([]blockedRange, len(table))
	for i, e := range table {
		out[i] = blockedRange{prefix: netip.MustParsePrefix(e.cidr), name: e.name}
	}
	return out
}

// addressPolicy decides which addresses may be dialled. It is immutable
// once built.
type addressPolicy struct {
	builtin []blockedRange
	extra   []netip.Prefix
	// exceptions maps a canonical host to the exact addresses it may use
	// despite the table.
	exceptions map[string][]netip.Addr
}

func newAddressPolicy(extra []netip.Prefix, allow []HostAddress) *addressPolicy {
	ap := &addressPolicy{builtin: blockedRanges(), extra: extra, exceptions: map[string][]netip.Addr{}}
	for _, ha := range allow {
		h := exceptionKey(ha.Host)
		ap.exceptions[h] = append(ap.exceptions[h], ha.Addr.WithZone(""))
	}
	return ap
}

// blocked reports whether a is refused regardless of host, and why (the
// range and its class, for logs only).
func (ap *addressPolicy) blocked(a netip.Addr) (string, bool) {
	a = a.WithZone("")
	if !a.IsValid() {
		return "invalid address", true
	}
	for _, r := range ap.builtin {
		if r.prefix.Contains(a) {
			return r.prefix.String() + " (" + r.name + ")", true
		}
	}
	for _, p := range ap.extra {
		if p.Contains(a) {
			return p.String() + " (deny_cidr)", true
		}
	}
	if v4, ok := embeddedIPv4(a); ok {
		if why, bad := ap.blocked(v4); bad {
			return "embedded IPv4 " + v4.String() + " in " + why, true
		}
	}
	return "", false
}

// allowed reports whether host may connect to a: either a is not blocked,
// or (host, a) is an exact exception. Only the host being fetched is
// consulted, so another name that resolves to the same address does not
// inherit the exception.
func (ap *addressPolicy) allowed(host string, a netip.Addr) (string, bool) {
	a = a.WithZone("")
	why, bad := ap.blocked(a)
	if !bad {
		return "", true
	}
	for _, ok := range ap.exceptions[exceptionKey(host)] {
		if ok == a {
			return "", true
		}
	}
	return why, false
}

// embeddedIPv4 extracts the IPv4 address carried in the low 32 bits of an
// IPv4-compatible (::a.b.c.d) or IPv4-mapped (::ffff:a.b.c.d) address.
// Both ranges are blocked wholesale; the extraction matters for deny_cidr
// entries, which must not be sidestepped by writing an IPv4 target in
// IPv6 form.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	if a.Is4In6() {
		return a.Unmap(), true
	}
	b := a.As16()
	for _, x := range b[:12] {
		if x != 0 {
			return netip.Addr{}, false
		}
	}
	return netip.AddrFrom4([4]byte(b[12:])), true
}
