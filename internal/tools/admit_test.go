package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestWebFetchDescriptor(t *testing.T) {
	w := newEnv().fetcher(t, DefaultPolicy())
	d := w.Descriptor()
	if d.ID != (ID{Server: "promptforge", Name: "web_fetch"}) || d.ID.String() != "promptforge/web_fetch" {
		t.Errorf("ID = %v; want promptforge/web_fetch", d.ID)
	}
	if d.WireName != "web_fetch" {
		t.Errorf("WireName = %q", d.WireName)
	}
	if d.Description != "Fetch a web page and return its main content as markdown." {
		t.Errorf("Description = %q", d.Description)
	}
	var schema struct {
		Type       string
		Required   []string
		Properties map[string]map[string]any
	}
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || !reflect.DeepEqual(schema.Required, []string{"url"}) {
		t.Errorf("schema type %q required %v; want object [url]", schema.Type, schema.Required)
	}
	if got := schema.Properties["max_chars"]["maximum"]; got != float64(40_000) {
		t.Errorf("max_chars.maximum = %v; want 40000", got)
	}
	if got := schema.Properties["max_chars"]["minimum"]; got != float64(1) {
		t.Errorf("max_chars.minimum = %v; want 1", got)
	}
	if schema.Properties["url"]["type"] != "string" || schema.Properties["raw"]["type"] != "boolean" {
		t.Errorf("url/raw types = %v/%v", schema.Properties["url"]["type"], schema.Properties["raw"]["type"])
	}

	// The ceiling follows the policy.
	p := DefaultPolicy()
	p.MaxChars = 1234
	w2 := newEnv().fetcher(t, p)
	json.Unmarshal(w2.Descriptor().Parameters, &schema)
	if got := schema.Properties["max_chars"]["maximum"]; got != float64(1234) {
		t.Errorf("max_chars.maximum with MaxChars 1234 = %v", got)
	}
}

func TestFetchArgumentErrors(t *testing.T) {
	env := newEnv()
	w := env.fetcher(t, DefaultPolicy())
	tests := []struct {
		args string
		want string
	}{
		{`{}`, "web_fetch: missing url argument"},
		{`{"url": null}`, "web_fetch: missing url argument"},
		{`{"url": 7}`, "web_fetch: missing url argument"},
		{`[]`, "web_fetch: arguments must be a JSON object with a url"},
		{`{"url": "https://example.com/", "max_chars": 0}`, "web_fetch: max_chars must be a positive integer"},
		{`{"url": "https://example.com/", "max_chars": -5}`, "web_fetch: max_chars must be a positive integer"},
		{`{"url": "https://example.com/", "max_chars": 2.5}`, "web_fetch: max_chars must be a positive integer"},
		{`{"url": "https://example.com/", "max_chars": "100"}`, "web_fetch: max_chars must be a positive integer"},
		{`{"url": "https://example.com/", "raw": "yes"}`, "web_fetch: raw must be a boolean"},
		{`{"url": "https://example.com/", "raw": 1}`, "web_fetch: raw must be a boolean"},
	}
	for _, tc := range tests {
		_, err := w.Call(context.Background(), json.RawMessage(tc.args))
		if err == nil || err.Error() != tc.want || KindOf(err) != KindInvalidArguments {
			t.Errorf("Call(%s) = %v (kind %v); want %q (invalid arguments)", tc.args, err, KindOf(err), tc.want)
		}
	}
	if n := env.res.lookupCount(); n != 0 {
		t.Errorf("argument errors caused %d lookups", n)
	}

	// null and absent take the defaults; huge values clamp; unknown keys
	// are ignored.
	for _, tc := range []struct {
		args string
		max  int
		raw  bool
	}{
		{`{"url":"u"}`, 40_000, false},
		{`{"url":"u","max_chars":null,"raw":null}`, 40_000, false},
		{`{"url":"u","max_chars":1,"raw":true}`, 1, true},
		{`{"url":"u","max_chars":40001}`, 40_000, false},
		{`{"url":"u","max_chars":123456789012345678901234567890}`, 40_000, false},
		{`{"url":"u","extra":{"x":1}}`, 40_000, false},
	} {
		a, err := w.parseFetchArgs(json.RawMessage(tc.args))
		if err != nil || a.maxChars != tc.max || a.raw != tc.raw || a.url != "u" {
			t.Errorf("parseFetchArgs(%s) = %+v, %v; want max %d raw %v", tc.args, a, err, tc.max, tc.raw)
		}
	}
}

func TestBadURLsFailBeforeNetwork(t *testing.T) {
	env := newEnv()
	env.res.set("example.com", []string{publicIP})
	w := env.fetcher(t, DefaultPolicy())
	hardCases := []struct {
		url  string
		want string
	}{
		{"https://user:secret@example.com/", "web_fetch: url must not contain userinfo"},
		{"https://user@example.com/", "web_fetch: url must not contain userinfo"},
		{"https://example.com:8080/", "web_fetch: port not allowed: 8080"},
		{"https://0177.0.0.1/", "web_fetch: ip literal host not allowed: 127.0.0.1"},
		{"https://2130706433/", "web_fetch: ip literal host not allowed: 127.0.0.1"},
		{"https://[::1]/", "web_fetch: ip literal host not allowed: ::1"},
		{"https://127.1/", "web_fetch: ip literal host not allowed: 127.0.0.1"},
		{"https://0x7f.1/", "web_fetch: ip literal host not allowed: 127.0.0.1"},
		{"https://[::ffff:127.0.0.1]/", "web_fetch: ip literal host not allowed: ::ffff:127.0.0.1"},
		{"https://8.8.8.8/", "web_fetch: ip literal host not allowed: 8.8.8.8"},
		{"not a url", "web_fetch: invalid url"},
		{"/relative/path", "web_fetch: invalid url"},
		{"https:///nohost", "web_fetch: invalid url"},
		{"https://%31%32%37.0.0.1/", "web_fetch: invalid url"},
		{"https://example.123/", "web_fetch: invalid url"},
		{"https://example.com:99999/", "web_fetch: invalid url"},
		{"https://[fe80::1%25eth0]/", "web_fetch: invalid url"},
	}
	for _, tc := range hardCases {
		err := fetchHard(t, w, map[string]any{"url": tc.url})
		if err.Error() != tc.want {
			t.Errorf("fetch %q: error %q; want %q", tc.url, err.Error(), tc.want)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("fetch %q: error leaks the password: %q", tc.url, err.Error())
		}
	}
	softCases := []struct {
		url  string
		want string
	}{
		{"http://example.com/", "scheme not allowed: http"},
		{"ftp://example.com/", "scheme not allowed: ftp"},
		{"file:///etc/passwd", "scheme not allowed: file"},
		{"javascript:alert(1)", "scheme not allowed: javascript"},
	}
	for _, tc := range softCases {
		if got := fetchOK(t, w, map[string]any{"url": tc.url}); got != tc.want {
			t.Errorf("fetch %q = %q; want soft %q", tc.url, got, tc.want)
		}
	}
	if n := env.res.lookupCount(); n != 0 {
		t.Errorf("refused URLs caused %d DNS lookups", n)
	}
	if d := env.net.dialedAddrs(); len(d) != 0 {
		t.Errorf("refused URLs dialled %v", d)
	}
}

func TestIPLiteralsWhenAllowed(t *testing.T) {
	env := newEnv()
	p := DefaultPolicy()
	p.AllowIPLiterals = true
	w := env.fetcher(t, p)
	for _, u := range []string{"https://0177.0.0.1/", "https://2130706433/", "https://127.1/", "https://[::1]/",
		"https://[::ffff:8.8.8.8]/", "https://169.254.169.254/latest/meta-data/", "https://0xa9fea9fe/"} {
		err := fetchHard(t, w, map[string]any{"url": u})
		if !strings.HasPrefix(err.Error(), "web_fetch: host ") || !strings.HasSuffix(err.Error(), " is not fetchable") {
			t.Errorf("fetch %q: %q; want host ... is not fetchable", u, err.Error())
		}
	}
	if d := env.net.dialedAddrs(); len(d) != 0 {
		t.Errorf("blocked literals were dialled: %v", d)
	}
}

func TestAdmissionCanonicalizes(t *testing.T) {
	a := &admitter{allowHTTP: true, allowIPLiterals: true, ports: []uint16{80, 443, 8443}, addrs: newAddressPolicy(nil, nil), profile: newIDNAProfile()}
	tests := []struct{ in, want string }{
		{"HTTPS://Example.COM/a?b=1#frag", "https://example.com/a?b=1"},
		{"https://example.com:443", "https://example.com/"},
		{"https://example.com:8443/x", "https://example.com:8443/x"},
		{"  https://exa\tmple.com/\n ", "https://example.com/"},
		{"https://b\u00fccher.example/", "https://xn--bcher-kva.example/"},
		{"https://8.8.8.8/", "https://8.8.8.8/"},
		{"https://134744072/", "https://8.8.8.8/"},
		{"https://[2001:4860:4860:0:0:0:0:8888]/", "https://[2001:4860:4860::8888]/"},
		{"https://example.com/?q=a%20b&x", "https://example.com/?q=a%20b&x"},
	}
	for _, tc := range tests {
		got, f := a.admit(tc.in)
		if f != nil {
			t.Errorf("admit(%q) failed: %v", tc.in, f)
			continue
		}
		if got.u.String() != tc.want {
			t.Errorf("admit(%q) = %q; want %q", tc.in, got.u.String(), tc.want)
		}
	}
}
