package tools

import (
	"net/netip"
	"testing"
)

func TestParseHostWHATWGForms(t *testing.T) {
	p := newIDNAProfile()
	tests := []struct {
		in   string
		kind hostKind
		want string // canonical name; "" means invalid
	}{
		{"127.0.0.1", hostIPv4, "127.0.0.1"},
		{"0177.0.0.1", hostIPv4, "127.0.0.1"},
		{"2130706433", hostIPv4, "127.0.0.1"},
		{"127.1", hostIPv4, "127.0.0.1"},
		{"127.0.1", hostIPv4, "127.0.0.1"},
		{"0x7f.1", hostIPv4, "127.0.0.1"},
		{"0X7F.0.0.1", hostIPv4, "127.0.0.1"},
		{"0x7f000001", hostIPv4, "127.0.0.1"},
		{"017700000001", hostIPv4, "127.0.0.1"},
		{"0x", hostIPv4, "0.0.0.0"},
		{"0", hostIPv4, "0.0.0.0"},
		{"127.0.0.1.", hostIPv4, "127.0.0.1"},
		{"169.254.43518", hostIPv4, "169.254.169.254"},
		{"0xa9fea9fe", hostIPv4, "169.254.169.254"},
		{"\uff11\uff12\uff17.0.0.1", hostIPv4, "127.0.0.1"}, // full-width digits map to ASCII
		{"127\u30020\u30020\u30021", hostIPv4, "127.0.0.1"}, // ideographic full stops
		{"4294967295", hostIPv4, "255.255.255.255"},
		{"4294967296", 0, ""},
		{"256.0.0.1", 0, ""},
		{"1.2.3.4.5", 0, ""},
		{"1.2.3.08", 0, ""},
		{"example.123", 0, ""},
		{"1.0x100.0.0", 0, ""},
		{"127.0.0.1..", 0, ""},
		{"a..b", 0, ""},
		{"[::1]", hostIPv6, "::1"},
		{"[::ffff:127.0.0.1]", hostIPv6, "::ffff:127.0.0.1"},
		{"[::FFFF:7F00:1]", hostIPv6, "::ffff:127.0.0.1"},
		{"::1", hostIPv6, "::1"},
		{"[fe80::1%eth0]", 0, ""},
		{"[::ffff:0177.0.0.1]", 0, ""},
		{"[1.2.3.4]", 0, ""},
		{"EXAMPLE.com", hostName, "example.com"},
		{"my_host.example.com", hostName, "my_host.example.com"},
		{"b\u00fccher.example", hostName, "xn--bcher-kva.example"},
		{"example.com.", hostName, "example.com."},
		{"0x7g.example", hostName, "0x7g.example"},
		{"1.2.3.4x", hostName, "1.2.3.4x"},
		{"exa mple.com", 0, ""},
		{"exa%mple.com", 0, ""},
		// Allowed by the URL Standard, but net/url writes them
		// percent-encoded in a host and then refuses its own output, so
		// the canonical URL would not be a fixed point (FuzzAdmitURL).
		{"\ufe38", 0, ""}, // maps to "}" under IDNA
		{"a{b}.example", 0, ""},
		{"a`b.example", 0, ""},
		{"", 0, ""},
	}
	for _, tc := range tests {
		h, err := parseHost(p, tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("parseHost(%q) = %+v; want invalid", tc.in, h)
			}
			continue
		}
		if err != nil || h.kind != tc.kind || h.name != tc.want {
			t.Errorf("parseHost(%q) = %+v, %v; want kind %d name %q", tc.in, h, err, tc.kind, tc.want)
		}
	}
}

// blockedTable pins the first and last address of every built-in range.
var blockedTable = []struct{ first, last string }{
	{"0.0.0.0", "0.255.255.255"},
	{"10.0.0.0", "10.255.255.255"},
	{"100.64.0.0", "100.127.255.255"},
	{"127.0.0.0", "127.255.255.255"},
	{"169.254.0.0", "169.254.255.255"},
	{"172.16.0.0", "172.31.255.255"},
	{"192.0.0.0", "192.0.0.255"},
	{"192.0.2.0", "192.0.2.255"},
	{"192.88.99.0", "192.88.99.255"},
	{"192.168.0.0", "192.168.255.255"},
	{"198.18.0.0", "198.19.255.255"},
	{"198.51.100.0", "198.51.100.255"},
	{"203.0.113.0", "203.0.113.255"},
	{"224.0.0.0", "239.255.255.255"},
	{"240.0.0.0", "255.255.255.254"},
	{"255.255.255.255", "255.255.255.255"},
	{"::", "::"},
	{"::1", "::1"},
	{"::", "::ffff:ffff"},
	{"::ffff:0:0", "::ffff:ffff:ffff"},
	{"64:ff9b::", "64:ff9b::ffff:ffff"},
	{"64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"},
	{"100::", "100::ffff:ffff:ffff:ffff"},
	{"2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
}

func TestAddressMatrix(t *testing.T) {
	ap := newAddressPolicy(nil, nil)
	for _, r := range blockedTable {
		for _, s := range []string{r.first, r.last} {
			if _, bad := ap.blocked(netip.MustParseAddr(s)); !bad {
				t.Errorf("%s is allowed; it is in a blocked range", s)
			}
		}
	}
	if len(blockedTable) != len(blockedRanges()) {
		t.Errorf("the test pins %d ranges but the table has %d; pin the new ones", len(blockedTable), len(blockedRanges()))
	}

	embedded := []string{
		"::ffff:127.0.0.1", "::ffff:8.8.8.8", // mapped: blocked wholesale, even public
		"::127.0.0.1", "::8.8.8.8", // compatible
		"64:ff9b::7f00:1", "64:ff9b::808:808", // NAT64
		"::ffff:169.254.169.254",
		"fe80::1%eth0",
	}
	for _, s := range embedded {
		if _, bad := ap.blocked(netip.MustParseAddr(s)); !bad {
			t.Errorf("%s is allowed; embedded and mapped IPv4 forms must be refused", s)
		}
	}

	neighbours := []string{
		"11.0.0.0", "9.255.255.255", "172.32.0.0", "172.15.255.255", "223.255.255.255",
		"100.128.0.0", "100.63.255.255", "169.253.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0",
		"2001:db9::1", "2001:db7:ffff::1", "3fff:1000::1", "2001:4860:4860::8888", "8.8.8.8", publicIP,
	}
	for _, s := range neighbours {
		if why, bad := ap.blocked(netip.MustParseAddr(s)); bad {
			t.Errorf("%s is blocked by %s; it is a public neighbour", s, why)
		}
	}
}

func TestDenyCIDRExtra(t *testing.T) {
	ap := newAddressPolicy([]netip.Prefix{netip.MustParsePrefix("8.8.8.0/24")}, nil)
	for _, s := range []string{"8.8.8.8", "8.8.8.0", "8.8.8.255"} {
		why, bad := ap.blocked(netip.MustParseAddr(s))
		if !bad || why != "8.8.8.0/24 (deny_cidr)" {
			t.Errorf("blocked(%s) = %q, %v; want refused by the deny_cidr entry", s, why, bad)
		}
	}
	if _, bad := ap.blocked(netip.MustParseAddr("8.8.9.1")); bad {
		t.Error("8.8.9.1 is blocked; only 8.8.8.0/24 was denied")
	}
	// An IPv4 target written as an IPv4-compatible IPv6 address is
	// re-checked as IPv4 against the extras as well.
	if why, bad := ap.blocked(netip.MustParseAddr("::8.8.8.8")); !bad || why == "" {
		t.Errorf("::8.8.8.8 = %q, %v; want blocked", why, bad)
	}
}

func TestExactExceptionIsPerHost(t *testing.T) {
	loop := netip.MustParseAddr("127.0.0.1")
	ap := newAddressPolicy(nil, []HostAddress{{Host: "Internal.Example.", Addr: loop}})
	cases := []struct {
		host string
		addr string
		want bool
	}{
		{"internal.example", "127.0.0.1", true},
		{"internal.example.", "127.0.0.1", true},
		{"other.example", "127.0.0.1", false},    // same address, different host
		{"internal.example", "127.0.0.2", false}, // same host, different address
		{"internal.example", "::ffff:127.0.0.1", false},
		{"sub.internal.example", "127.0.0.1", false},
	}
	for _, c := range cases {
		if _, got := ap.allowed(c.host, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("allowed(%q, %s) = %v; want %v", c.host, c.addr, got, c.want)
		}
	}
}
