package tools

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// These tests run real loopback listeners behind a resolver the test
// controls. The production table blocks 127.0.0.0/8, so a server is
// reachable only through testNet's public-address route or an exact
// allow_host_address exception; an "internal" server's hit counter proves
// a refused target was never contacted.

const okPage = "plain text from the test server"

func okHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(okPage))
}

func TestPublicLookingNameResolvingToLoopbackIsRefused(t *testing.T) {
	internal := newServer(t, okHandler)
	for _, host := range []string{"public.test", "localhost", "metadata.test"} {
		env := newEnv()
		env.res.set("public.test", []string{"127.0.0.1"}).
			set("localhost", []string{"127.0.0.1", "::1"}).
			set("metadata.test", []string{"169.254.169.254"})
		w := env.fetcher(t, testPolicy(internal.port()))
		err := fetchHard(t, w, map[string]any{"url": fmt.Sprintf("http://%s:%d/", host, internal.port())})
		if want := "web_fetch: host " + host + " has no allowed address"; err.Error() != want {
			t.Errorf("%s: error %q; want %q", host, err.Error(), want)
		}
		if d := env.net.dialedAddrs(); len(d) != 0 {
			t.Errorf("%s: dialled %v", host, d)
		}
	}
	if n := internal.hits.Load(); n != 0 {
		t.Fatalf("internal server received %d requests; want 0", n)
	}
}

func TestResolverAnswers(t *testing.T) {
	srv := newServer(t, okHandler)
	env := newEnv()
	env.res.set("mixed.test", []string{"127.0.0.1", "10.1.2.3", publicIP, "::1", "fd00::1"}).
		set("private.test", []string{"10.0.0.1", "192.168.1.1", "::1", "fe80::1"})
	w := env.fetcher(t, testPolicy(srv.port()))

	// Mixed answers connect only to the public address.
	text := fetchOK(t, w, map[string]any{"url": fmt.Sprintf("http://mixed.test:%d/", srv.port())})
	if !strings.HasSuffix(text, okPage) {
		t.Fatalf("mixed answers: %q", text)
	}
	want := []string{fmt.Sprintf("%s:%d", publicIP, srv.port())}
	if d := env.net.dialedAddrs(); !slices.Equal(d, want) {
		t.Fatalf("mixed answers dialled %v; want only %v", d, want)
	}

	// Only private answers: no allowed address, nothing dialled.
	err := fetchHard(t, w, map[string]any{"url": fmt.Sprintf("http://private.test:%d/", srv.port())})
	if err.Error() != "web_fetch: host private.test has no allowed address" {
		t.Fatalf("only-private: %q", err.Error())
	}
	if d := env.net.dialedAddrs(); len(d) != 1 {
		t.Fatalf("only-private dialled %v", d[1:])
	}

	// Lookup failure is soft.
	if got := fetchOK(t, w, map[string]any{"url": "https://nosuch.test/"}); !strings.HasPrefix(got, "dns resolution failed for nosuch.test") {
		t.Fatalf("lookup failure = %q", got)
	}
}

func TestRebindingIsRefused(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		// No keep-alive: every request dials, so every request resolves.
		w.Header().Set("Connection", "close")
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, "/final", http.StatusFound)
			return
		}
		okHandler(w, r)
	})
	env := newEnv()
	env.res.set("rebind.test", []string{publicIP}, []string{"127.0.0.1"})
	w := env.fetcher(t, testPolicy(srv.port()))
	u := fmt.Sprintf("http://rebind.test:%d/", srv.port())

	if text := fetchOK(t, w, map[string]any{"url": u}); !strings.HasSuffix(text, okPage) {
		t.Fatalf("first fetch (public answer) = %q", text)
	}
	err := fetchHard(t, w, map[string]any{"url": u})
	if err.Error() != "web_fetch: host rebind.test has no allowed address" {
		t.Fatalf("second fetch (loopback answer) = %q", err.Error())
	}
	if n := env.res.lookupCount(); n != 2 {
		t.Fatalf("%d lookups; want one per fetch (no caching)", n)
	}
	if n := srv.hits.Load(); n != 1 {
		t.Fatalf("server hits = %d; want only the first fetch", n)
	}

	// The same holds within one fetch: the redirect hop resolves again.
	env2 := newEnv()
	env2.res.set("rebind.test", []string{publicIP}, []string{"127.0.0.1"})
	w2 := env2.fetcher(t, testPolicy(srv.port()))
	err = fetchHard(t, w2, map[string]any{"url": fmt.Sprintf("http://rebind.test:%d/hop", srv.port())})
	if err.Error() != "web_fetch: host rebind.test has no allowed address" {
		t.Fatalf("redirect hop after rebinding = %q", err.Error())
	}
	if d := env2.net.dialedAddrs(); len(d) != 1 {
		t.Fatalf("dialled %v; want only the first hop", d)
	}
}

func TestRedirectToInternalIsNeverContacted(t *testing.T) {
	internal := newServer(t, okHandler)
	ip := internal.port()
	targets := []struct {
		location string
		literals bool
		hard     string // want a hard error with this text; else soft containing want
		want     string
	}{
		{location: fmt.Sprintf("http://127.0.0.1:%d/", ip), want: "refused: ip literal host not allowed: 127.0.0.1"},
		{location: fmt.Sprintf("http://2130706433:%d/", ip), want: "refused: ip literal host not allowed: 127.0.0.1"},
		{location: fmt.Sprintf("http://0177.0.0.1:%d/", ip), want: "refused: ip literal host not allowed: 127.0.0.1"},
		{location: fmt.Sprintf("http://%%31%%32%%37.0.0.1:%d/", ip), want: "refused: invalid url"},
		{location: fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", ip), want: "refused: ip literal host not allowed: ::ffff:127.0.0.1"},
		{location: fmt.Sprintf("http://127.0.0.1:%d/", ip), literals: true, want: "refused: host 127.0.0.1 is not fetchable"},
		{location: fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", ip), literals: true, want: "refused: host [::ffff:127.0.0.1] is not fetchable"},
		{location: fmt.Sprintf("http://internal.test:%d/", ip), hard: "web_fetch: host internal.test has no allowed address"},
		{location: fmt.Sprintf("http://localhost:%d/", ip), hard: "web_fetch: host localhost has no allowed address"},
	}
	for _, tc := range targets {
		origin := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, tc.location, http.StatusFound)
		})
		env := newEnv()
		env.res.set("origin.test", []string{publicIP}).set("internal.test", []string{"127.0.0.1"}).set("localhost", []string{"127.0.0.1"})
		p := testPolicy(origin.port(), ip)
		p.AllowIPLiterals = tc.literals
		w := env.fetcher(t, p)
		a := map[string]any{"url": fmt.Sprintf("http://origin.test:%d/start", origin.port())}
		if tc.hard != "" {
			if err := fetchHard(t, w, a); err.Error() != tc.hard {
				t.Errorf("redirect to %s: %q; want %q", tc.location, err.Error(), tc.hard)
			}
		} else {
			got := fetchOK(t, w, a)
			wantPrefix := fmt.Sprintf("redirect from http://origin.test:%d/start to ", origin.port())
			if !strings.HasPrefix(got, wantPrefix) || !strings.HasSuffix(got, tc.want) {
				t.Errorf("redirect to %s: %q; want %q...%q", tc.location, got, wantPrefix, tc.want)
			}
		}
		if d := env.net.dialedAddrs(); len(d) != 1 {
			t.Errorf("redirect to %s dialled %v; want only the origin", tc.location, d)
		}
	}
	if n := internal.hits.Load(); n != 0 {
		t.Fatalf("internal server received %d requests; want 0", n)
	}
}

func TestRedirectAdmission(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if loc := r.URL.Query().Get("to"); loc != "" {
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		okHandler(w, r)
	})
	env := newEnv()
	env.res.set("site.test", []string{publicIP})
	w := env.fetcher(t, testPolicy(srv.port()))
	base := fmt.Sprintf("http://site.test:%d", srv.port())
	from := base + "/go"
	tests := []struct {
		to   string
		want string // soft text suffix after "refused: "
	}{
		{"http://user:pw@site.test:" + fmt.Sprint(srv.port()) + "/", "url must not contain userinfo"},
		{"http://site.test:8080/", "port not allowed: 8080"},
		{"ftp://site.test/file", "scheme not allowed: ftp"},
		{"file:///etc/passwd", "scheme not allowed: file"},
		{"gopher://site.test/", "scheme not allowed: gopher"},
		{"http://0x7f.1:" + fmt.Sprint(srv.port()) + "/", "ip literal host not allowed: 127.0.0.1"},
		{"http://%31%32%37.0.0.1/", "invalid url"},
	}
	for _, tc := range tests {
		got := fetchOK(t, w, map[string]any{"url": from + "?to=" + url.QueryEscape(tc.to)})
		if !strings.HasPrefix(got, "redirect from "+from+" to ") || !strings.HasSuffix(got, "refused: "+tc.want) {
			t.Errorf("redirect to %s = %q; want refused: %s", tc.to, got, tc.want)
		}
		if strings.Contains(got, "pw") || strings.Contains(got, "?to=") {
			t.Errorf("redirect message leaks userinfo or query: %q", got)
		}
	}
	// A relative hop on the same host is followed and reported as final.
	got := fetchOK(t, w, map[string]any{"url": from + "?to=/final%3Fk%3Dv"})
	if u, _, _, body := header(t, got); u != base+"/final?k=v" || body != okPage {
		t.Errorf("relative redirect: url %q body %q", u, body)
	}
}

func TestRedirectCap(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/hop/%d", &n); err == nil && n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusTemporaryRedirect)
			return
		}
		okHandler(w, r)
	})
	for _, limit := range []int{0, 1, 5, 20} {
		env := newEnv()
		env.res.set("site.test", []string{publicIP})
		p := testPolicy(srv.port())
		p.MaxRedirects = limit
		w := env.fetcher(t, p)
		base := fmt.Sprintf("http://site.test:%d", srv.port())

		got := fetchOK(t, w, map[string]any{"url": fmt.Sprintf("%s/hop/%d", base, limit)})
		if u, _, _, body := header(t, got); u != base+"/hop/0" || body != okPage {
			t.Errorf("limit %d, %d hops: url %q body %q; want success", limit, limit, u, body)
		}
		got = fetchOK(t, w, map[string]any{"url": fmt.Sprintf("%s/hop/%d", base, limit+1)})
		want := fmt.Sprintf("refused: too many redirects (the limit is %d)", limit)
		if !strings.HasPrefix(got, "redirect from ") || !strings.HasSuffix(got, want) {
			t.Errorf("limit %d, %d hops = %q; want %q", limit, limit+1, got, want)
		}
	}
}

func TestHTTPSRedirects(t *testing.T) {
	plain := newServer(t, okHandler)
	secure := newTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hop":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/downgrade":
			http.Redirect(w, r, fmt.Sprintf("http://www.example.com:%d/", plain.port()), http.StatusFound)
		default:
			okHandler(w, r)
		}
	})
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	env := newEnv()
	// The test certificate names *.example.com; the name resolves (in
	// the stub only) to loopback, reachable through the exact exception.
	env.res.set("www.example.com", []string{"127.0.0.1"})
	p := testPolicy(secure.port(), plain.port())
	if err := p.AllowHostAddress("www.example.com", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	w := env.fetcher(t, p, WithTLSConfig(&tls.Config{RootCAs: roots}))
	base := fmt.Sprintf("https://www.example.com:%d", secure.port())

	got := fetchOK(t, w, map[string]any{"url": base + "/hop"})
	if u, _, _, body := header(t, got); u != base+"/final" || body != okPage {
		t.Fatalf("https hop: url %q body %q", u, body)
	}
	got = fetchOK(t, w, map[string]any{"url": base + "/downgrade"})
	want := fmt.Sprintf("redirect from %s/downgrade to http://www.example.com:%d/ refused: https to http downgrade", base, plain.port())
	if got != want {
		t.Fatalf("downgrade = %q\nwant %q", got, want)
	}
	if n := plain.hits.Load(); n != 0 {
		t.Fatalf("plain-http target received %d requests", n)
	}
}

func TestExactExceptionEndToEnd(t *testing.T) {
	srv := newServer(t, okHandler)
	env := newEnv()
	env.res.set("internal.test", []string{"127.0.0.1"}).set("other.test", []string{"127.0.0.1"})
	p := testPolicy(srv.port())
	if err := p.AllowHostAddress("internal.test", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	w := env.fetcher(t, p)
	got := fetchOK(t, w, map[string]any{"url": fmt.Sprintf("http://INTERNAL.test.:%d/", srv.port())})
	if !strings.HasSuffix(got, okPage) {
		t.Fatalf("excepted host: %q", got)
	}
	err := fetchHard(t, w, map[string]any{"url": fmt.Sprintf("http://other.test:%d/", srv.port())})
	if err.Error() != "web_fetch: host other.test has no allowed address" {
		t.Fatalf("other host with the same address: %q", err.Error())
	}
	if n := srv.hits.Load(); n != 1 {
		t.Fatalf("server hits = %d; want 1", n)
	}
}

func TestNoAmbientIdentity(t *testing.T) {
	proxy := newServer(t, okHandler)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "abc"})
			http.Redirect(w, r, "/final", http.StatusFound)
			return
		}
		okHandler(w, r)
	})
	env := newEnv()
	env.res.set("site.test", []string{publicIP})
	w := env.fetcher(t, testPolicy(srv.port()))
	for range 2 {
		fetchOK(t, w, map[string]any{"url": fmt.Sprintf("http://site.test:%d/start?k=v", srv.port())})
	}
	hs := srv.requestHeaders()
	if len(hs) != 4 {
		t.Fatalf("server saw %d requests; want 4", len(hs))
	}
	for i, h := range hs {
		for _, name := range []string{"Cookie", "Authorization", "Referer", "Proxy-Authorization"} {
			if v := h.Get(name); v != "" {
				t.Errorf("request %d carried %s: %q", i, name, v)
			}
		}
		if ua := h.Get("User-Agent"); ua != "promptforge-webfetch/0.0" {
			t.Errorf("request %d User-Agent = %q", i, ua)
		}
	}
	if n := proxy.hits.Load(); n != 0 {
		t.Fatalf("the ambient proxy received %d requests", n)
	}
}
