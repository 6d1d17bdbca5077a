package tools

import (
	"errors"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host parsing follows the URL Standard's host parser for special schemes
// (https://url.spec.whatwg.org/#host-parsing) because that is what decides
// which address a browser-like client would contact. Go's net/url keeps
// "0177.0.0.1", "2130706433", "127.1" and "0x7f.1" as opaque names, and a
// system resolver built on inet_aton would turn each of them into
// 127.0.0.1; parsing them here as IPv4 means they are refused as IP
// literals before any lookup can happen.

// hostKind says what a canonical host denotes.
type hostKind uint8

const (
	hostName hostKind = iota + 1
	hostIPv4
	hostIPv6
)

// parsedHost is a host in canonical form: a lower-case ASCII name (IDNA
// applied), or an IP address.
type parsedHost struct {
	kind hostKind
	name string // canonical name; the address's string form for IPs
	ip   netip.Addr
}

// urlString is the host as it appears in a URL authority.
func (h parsedHost) urlString() string {
	if h.kind == hostIPv6 {
		return "[" + h.name + "]"
	}
	return h.name
}

var errBadHost = errors.New("invalid host")

// newIDNAProfile is UTS #46 processing with the URL Standard's flags:
// non-transitional, no STD3 restriction (so "_" survives), no hyphen
// checks, joiner and bidi checks on, no DNS length checks.
func newIDNAProfile() *idna.Profile {
	return idna.New(
		idna.MapForLookup(),
		idna.Transitional(false),
		idna.StrictDomainName(false),
		idna.CheckHyphens(false),
		idna.CheckJoiners(true),
		idna.BidiRule(),
		idna.VerifyDNSLength(false),
	)
}

// parseHost turns a URL host (already percent-decoded, port removed) into
// its canonical form. A host with ':' or in brackets must be an IPv6
// literal; a host whose last label is a number is an IPv4 address in any
// of the URL Standard's notations or it is invalid.
func parseHost(profile *idna.Profile, raw string) (parsedHost, error) {
	if raw == "" {
		return parsedHost{}, errBadHost
	}
	if strings.HasPrefix(raw, "[") || strings.Contains(raw, ":") {
		inner := raw
		if strings.HasPrefix(raw, "[") {
			if !strings.HasSuffix(raw, "]") {
				return parsedHost{}, errBadHost
			}
			inner = raw[1 : len(raw)-1]
		}
		a, err := netip.ParseAddr(inner)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return parsedHost{}, errBadHost
		}
		return parsedHost{kind: hostIPv6, name: a.String(), ip: a}, nil
	}
	if !utf8.ValidString(raw) {
		return parsedHost{}, errBadHost
	}
	ascii, err := profile.ToASCII(raw)
	if err != nil || ascii == "" {
		return parsedHost{}, errBadHost
	}
	ascii = strings.ToLower(ascii)
	// The canonical form must be a fixed point, so that whoever parses
	// the rewritten URL next (the transport, a redirect's re-admission)
	// arrives at the same host.
	if again, err := profile.ToASCII(ascii); err != nil || strings.ToLower(again) != ascii {
		return parsedHost{}, errBadHost
	}
	for i := 0; i < len(ascii); i++ {
		if forbiddenDomainByte(ascii[i]) {
			return parsedHost{}, errBadHost
		}
	}
	if endsInNumber(ascii) {
		a, ok := parseIPv4(ascii)
		if !ok {
			return parsedHost{}, errBadHost
		}
		return parsedHost{kind: hostIPv4, name: a.String(), ip: a}, nil
	}
	// Stricter than the URL Standard: an empty label (other than one
	// trailing dot) is refused, so odd spellings such as "127.0.0.1.."
	// never reach a resolver that might read them as an address.
	labels := strings.Split(strings.TrimSuffix(ascii, "."), ".")
	for _, l := range labels {
		if l == "" {
			return parsedHost{}, errBadHost
		}
	}
	return parsedHost{kind: hostName, name: ascii}, nil
}

// forbiddenDomainByte reports the URL Standard's forbidden domain code
// points (all ASCII) plus any non-ASCII byte, which cannot survive IDNA
// processing legitimately, plus "{", "}" and "`": the standard allows
// those in a host, but net/url writes them percent-encoded there and then
// refuses to parse what it wrote (url.Parse allows a percent-encoded byte
// in a host only above ASCII), so a host holding one could not be written
// back as a URL that admits to itself.
func forbiddenDomainByte(c byte) bool {
	if c <= 0x20 || c >= 0x7f {
		return true
	}
	return strings.IndexByte("#%/:<>?@[\\]^|{}`", c) >= 0
}

// endsInNumber is the URL Standard's "ends in a number" check.
func endsInNumber(host string) bool {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(last)
	return ok
}

// ipv4Number parses one dotted part: decimal, "0"-prefixed octal or
// "0x"-prefixed hex, where "0x" alone is zero. Values past 2^32 saturate
// at 2^32, which every caller treats as out of range.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d, ok := digitValue(s[i])
		if !ok || d >= base {
			return 0, false
		}
		v = min(v*base+d, 1<<32)
	}
	return v, true
}

func digitValue(c byte) (uint64, bool) {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0'), true
	case c >= 'a' && c <= 'f':
		return uint64(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return uint64(c-'A') + 10, true
	}
	return 0, false
}

// parseIPv4 is the URL Standard's IPv4 parser: one to four parts, every
// part but the last at most 255, the last filling the remaining bytes.
func parseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := uint32(last)
	for i, n := range nums[:len(nums)-1] {
		v += uint32(n) << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
