package tools

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultPolicyValues(t *testing.T) {
	p := DefaultPolicy()
	want := Policy{
		AllowHTTP:       false,
		AllowPorts:      []uint16{80, 443},
		AllowIPLiterals: false,
		MaxRedirects:    5,
		MaxBytes:        8 << 20,
		MaxChars:        40_000,
		ConnectTimeout:  5 * time.Second,
		Timeout:         20 * time.Second,
		PoolIdleTimeout: 10 * time.Second,
		UserAgent:       "promptforge-webfetch/0.0",
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("DefaultPolicy() = %+v\nwant %+v", p, want)
	}
	// Building the tool from the default keeps the default exactly.
	w, err := NewWebFetch(p)
	if err != nil {
		t.Fatalf("NewWebFetch(DefaultPolicy()): %v", err)
	}
	defer w.CloseIdleConnections()
	if !reflect.DeepEqual(w.Policy(), want) {
		t.Fatalf("NewWebFetch(DefaultPolicy()).Policy() = %+v; want the default", w.Policy())
	}
}

func TestPolicyValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Policy)
		knob   string // "" means valid
	}{
		{"zero redirects accepted", func(p *Policy) { p.MaxRedirects = 0 }, ""},
		{"redirect ceiling accepted", func(p *Policy) { p.MaxRedirects = 20 }, ""},
		{"redirects over ceiling", func(p *Policy) { p.MaxRedirects = 21 }, "max_redirects"},
		{"negative redirects", func(p *Policy) { p.MaxRedirects = -1 }, "max_redirects"},
		{"zero bytes", func(p *Policy) { p.MaxBytes = 0 }, "max_bytes"},
		{"bytes ceiling accepted", func(p *Policy) { p.MaxBytes = 64 << 20 }, ""},
		{"bytes over ceiling", func(p *Policy) { p.MaxBytes = 64<<20 + 1 }, "max_bytes"},
		{"zero chars", func(p *Policy) { p.MaxChars = 0 }, "max_chars"},
		{"chars ceiling accepted", func(p *Policy) { p.MaxChars = 10_000_000 }, ""},
		{"chars over ceiling", func(p *Policy) { p.MaxChars = 10_000_001 }, "max_chars"},
		{"zero connect timeout", func(p *Policy) { p.ConnectTimeout = 0 }, "connect_timeout"},
		{"connect timeout over ceiling", func(p *Policy) { p.ConnectTimeout = 61 * time.Second }, "connect_timeout"},
		{"zero timeout", func(p *Policy) { p.Timeout = 0 }, "timeout"},
		{"timeout over ceiling", func(p *Policy) { p.Timeout = 301 * time.Second }, "timeout"},
		{"timeout ceiling accepted", func(p *Policy) { p.Timeout = 300 * time.Second }, ""},
		{"zero pool idle", func(p *Policy) { p.PoolIdleTimeout = 0 }, "pool_idle_timeout"},
		{"pool idle over ceiling", func(p *Policy) { p.PoolIdleTimeout = 601 * time.Second }, "pool_idle_timeout"},
		{"newline user agent", func(p *Policy) { p.UserAgent = "agent\r\nX-Injected: 1" }, "user_agent"},
		{"empty user agent", func(p *Policy) { p.UserAgent = "" }, "user_agent"},
		{"no ports", func(p *Policy) { p.AllowPorts = nil }, "allow_ports"},
		{"port zero", func(p *Policy) { p.AllowPorts = []uint16{0, 443} }, "allow_ports"},
		{"invalid prefix", func(p *Policy) { p.DenyCIDRs = []netip.Prefix{{}} }, "deny_cidr"},
		{"malformed host", func(p *Policy) {
			p.AllowHostAddresses = []HostAddress{{Host: "bad host", Addr: netip.MustParseAddr("10.0.0.1")}}
		}, "allow_host_address"},
		{"invalid exception address", func(p *Policy) {
			p.AllowHostAddresses = []HostAddress{{Host: "ok.example"}}
		}, "allow_host_address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPolicy()
			tc.change(&p)
			err := p.Validate()
			if tc.knob == "" {
				if err != nil {
					t.Fatalf("Validate() = %v; want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.knob) {
				t.Fatalf("Validate() = %v; want an error naming %s", err, tc.knob)
			}
			if _, err := NewWebFetch(p); err == nil {
				t.Fatal("NewWebFetch accepted a policy Validate rejects")
			}
		})
	}
}

func TestPolicyStringHelpers(t *testing.T) {
	p := DefaultPolicy()
	for _, bad := range []string{"10.0.0.0", "10.0.0.0/33", "not-a-cidr", ""} {
		if err := p.DenyCIDR(bad); err == nil || !strings.Contains(err.Error(), "deny_cidr") {
			t.Errorf("DenyCIDR(%q) = %v; want an error naming deny_cidr", bad, err)
		}
	}
	for _, bad := range [][2]string{{"bad host", "10.0.0.1"}, {"", "10.0.0.1"}, {"a/b", "10.0.0.1"}, {"ok.example", "10.0.0"}} {
		if err := p.AllowHostAddress(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "allow_host_address") {
			t.Errorf("AllowHostAddress(%q, %q) = %v; want an error naming allow_host_address", bad[0], bad[1], err)
		}
	}
	if len(p.DenyCIDRs) != 0 || len(p.AllowHostAddresses) != 0 {
		t.Fatal("rejected entries were added")
	}
}

func TestPolicyDeduplicates(t *testing.T) {
	p := DefaultPolicy()
	for _, c := range []string{"10.1.0.0/16", "10.1.2.3/16", "fd00::/8"} {
		if err := p.DenyCIDR(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []string{"Internal.Example", "internal.example.", " internal.example "} {
		if err := p.AllowHostAddress(h, "10.0.0.7"); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.AllowHostAddress("internal.example", "10.0.0.8"); err != nil {
		t.Fatal(err)
	}
	p.AllowPorts = []uint16{443, 80, 443}
	n, err := p.normalized()
	if err != nil {
		t.Fatal(err)
	}
	wantCIDRs := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/8")}
	if !reflect.DeepEqual(n.DenyCIDRs, wantCIDRs) {
		t.Errorf("DenyCIDRs = %v; want %v", n.DenyCIDRs, wantCIDRs)
	}
	wantHosts := []HostAddress{
		{Host: "internal.example", Addr: netip.MustParseAddr("10.0.0.7")},
		{Host: "internal.example", Addr: netip.MustParseAddr("10.0.0.8")},
	}
	if !reflect.DeepEqual(n.AllowHostAddresses, wantHosts) {
		t.Errorf("AllowHostAddresses = %v; want %v", n.AllowHostAddresses, wantHosts)
	}
	if !reflect.DeepEqual(n.AllowPorts, []uint16{80, 443}) {
		t.Errorf("AllowPorts = %v; want [80 443]", n.AllowPorts)
	}
	if len(p.AllowPorts) != 3 {
		t.Error("normalizing changed the caller's slice")
	}
}
