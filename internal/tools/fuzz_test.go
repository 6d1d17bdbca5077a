package tools

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// FuzzAdmitURL looks for a URL whose host denotes a blocked address yet is
// admitted or dialled. It checks three things for every input the
// admission accepts (with IP literals and http allowed, so classification
// itself is exercised):
//
//  1. an admitted IP literal is outside every blocked range, and outside
//     what the standard library calls loopback, private, link-local,
//     multicast or unspecified (an independent oracle);
//  2. an admitted name cannot be read as an address by a lenient parser
//     (inet_aton style, as glibc resolvers do, or Go's own parsers);
//  3. dialling it through the guard, with a resolver that reads numeric
//     names the lenient way, only ever dials allowed addresses.
//
// It is deterministic and fast, so CI can run it with -fuzztime=20s.
func FuzzAdmitURL(f *testing.F) {
	for _, s := range []string{
		"https://0177.0.0.1/", "https://2130706433/", "https://127.1/", "https://127.0.1/", "https://0x7f.1/",
		"https://0x7f000001/", "https://017700000001/", "https://0X7F.0.0.1/", "https://127.0.0.1./", "https://127.0.0.1../",
		"https://%31%32%37.0.0.1/", "https://\uff11\uff12\uff17.0.0.1/", "https://127\u30020\u30020\u30021/",
		"https://[::1]/", "https://[::ffff:127.0.0.1]/", "https://[::ffff:7f00:1]/", "https://[0:0:0:0:0:ffff:7f00:1]/",
		"https://[::127.0.0.1]/", "https://[64:ff9b::7f00:1]/", "https://[fe80::1%25eth0]/", "https://[2002:7f00:1::]/",
		"https://169.254.169.254/latest/meta-data/", "https://0xa9fea9fe/", "https://169.254.43518/", "https://0/", "https://0.0.0.0/",
		"https://10.0.0.1/", "https://192.168.1.1:443/", "https://100.64.0.1/", "https://224.0.0.1/", "https://255.255.255.255/",
		"https://user@127.0.0.1/", "https://example.com\\@127.0.0.1/", "https://127.0.0.1:443@example.com/",
		"https://example.com#@127.0.0.1/", "https://example.com?@127.0.0.1/", "http://localhost/", "https://LOCALHOST./",
		"https://8.8.8.8/", "https://[2001:4860:4860::8888]/", "https://example.com/", "https://b\u00fccher.example/",
		"https://0x7g.example/", "https://1.2.3.4x/", "https://a..b/", " https://127.0.0.1/ ", "https://127.0.0.1\t/",
		"HTTPS://0177.1/", "https://[::]/", "https://00000000000000000177.0.0.1/", "https://0x00007f.1/",
	} {
		f.Add(s)
	}
	addrs := newAddressPolicy(nil, nil)
	profile := newIDNAProfile()
	ports := []uint16{80, 443}
	a := &admitter{allowHTTP: true, allowIPLiterals: true, ports: ports, addrs: addrs, profile: profile}

	f.Fuzz(func(t *testing.T, raw string) {
		tgt, fail := a.admit(raw)
		if fail != nil {
			return
		}
		host := tgt.u.Hostname()
		if tgt.host.kind != hostName {
			if why, bad := addrs.blocked(tgt.host.ip); bad {
				t.Fatalf("admitted %q whose host %s is blocked (%s)", raw, tgt.host.ip, why)
			}
			if special(tgt.host.ip) {
				t.Fatalf("admitted %q whose host %s is special by the standard library", raw, tgt.host.ip)
			}
		} else {
			name := strings.TrimSuffix(host, ".")
			if ip, ok := lenientAddr(name); ok {
				t.Fatalf("admitted %q as the name %q, which a lenient resolver reads as %s", raw, host, ip)
			}
		}

		// The canonical URL is a fixed point: admitting it again gives
		// the same URL, so nothing downstream re-parses it differently.
		again, fail := a.admit(tgt.u.String())
		if fail != nil || again.u.String() != tgt.u.String() {
			t.Fatalf("canonical %q of %q does not re-admit to itself: %v", tgt.u.String(), raw, fail)
		}

		var dialled []netip.Addr
		g := &guardedDialer{
			resolver:        lenientResolver{},
			dial:            recordDial(&dialled),
			connectTimeout:  1,
			addrs:           addrs,
			allowIPLiterals: true,
			ports:           ports,
			profile:         profile,
			log:             slog.New(slog.DiscardHandler),
		}
		// The address the transport dials, computed the way net/http
		// does from the request URL.
		_, _ = g.DialContext(context.Background(), "tcp", net.JoinHostPort(host, strconv.Itoa(int(tgt.port))))
		if len(dialled) == 0 {
			t.Fatalf("%q was admitted but the guard dialled nothing; admission and dialling disagree", raw)
		}
		for _, d := range dialled {
			if why, bad := addrs.blocked(d); bad || special(d) {
				t.Fatalf("%q dialled %s (%s)", raw, d, why)
			}
		}
	})
}

var errNoDial = errors.New("fuzz: not dialling")

func recordDial(into *[]netip.Addr) DialFunc {
	return func(_ context.Context, _, address string) (net.Conn, error) {
		if ap, err := netip.ParseAddrPort(address); err == nil {
			*into = append(*into, ap.Addr())
		}
		return nil, errNoDial
	}
}

// lenientResolver answers like a hostile system resolver that runs
// inet_aton before DNS: numeric names become the address they spell;
// other names get internal addresses mixed with one public address, so
// only the guard's filtering stands between them and a dial.
type lenientResolver struct{}

func (lenientResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if ip, ok := lenientAddr(strings.TrimSuffix(host, ".")); ok {
		return []net.IPAddr{{IP: ip.AsSlice()}}, nil
	}
	var out []net.IPAddr
	for _, s := range []string{"127.0.0.1", "::1", "169.254.169.254", "::ffff:10.0.0.1", "fd00::1", publicIP} {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// lenientAddr reads s as an address by every rule a resolver might use.
func lenientAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a, true
	}
	if ip := net.ParseIP(s); ip != nil {
		a, _ := netip.AddrFromSlice(ip)
		return a, true
	}
	return inetAton(s)
}

// inetAton is the classic BSD/glibc parser: one to four parts, each
// decimal, 0-prefixed octal or 0x-prefixed hex, the last filling the
// remaining bytes.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" || p[0] < '0' || p[0] > '9' {
			return netip.Addr{}, false
		}
		base := 10
		switch {
		case len(p) > 1 && (p[1] == 'x' || p[1] == 'X') && p[0] == '0':
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		if p == "" {
			vals[i] = 0
			continue
		}
		v, err := strconv.ParseUint(p, base, 64)
		if err != nil || v > 0xffffffff {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var v uint64
	switch len(vals) {
	case 1:
		v = vals[0]
	case 2:
		if vals[0] > 0xff || vals[1] > 0xffffff {
			return netip.Addr{}, false
		}
		v = vals[0]<<24 | vals[1]
	case 3:
		if vals[0] > 0xff || vals[1] > 0xff || vals[2] > 0xffff {
			return netip.Addr{}, false
		}
		v = vals[0]<<24 | vals[1]<<16 | vals[2]
	case 4:
		for _, x := range vals {
			if x > 0xff {
				return netip.Addr{}, false
			}
		}
		v = vals[0]<<24 | vals[1]<<16 | vals[2]<<8 | vals[3]
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// special is the standard library's view of non-public addresses,
// independent of the table under test.
func special(a netip.Addr) bool {
	a = a.WithZone("")
	if a.Is4In6() {
		return true
	}
	return a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || !a.IsGlobalUnicast()
}
