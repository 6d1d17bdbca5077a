package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedaction(t *testing.T) {
	u, _ := url.Parse("https://user:pw@example.com:8443/path/x?token=secret#frag-secret")
	if got := URL(u); got != "https://example.com:8443/path/x" {
		t.Errorf("URL = %q", got)
	}
	for _, raw := range []string{
		"https://%zz:pw@evil/x?token=secret#frag",
		"ht tp://user:secret@host/p?secret",
		"https://a\\b@host/?secret",
	} {
		got := RawURL(raw)
		if strings.Contains(got, "secret") || strings.Contains(got, "pw") {
			t.Errorf("RawURL(%q) = %q; leaks a secret", raw, got)
		}
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"plain", 10, "plain"},
		{"  a\t\nb\x00c  ", 10, "a b c"},
		{"bad\xffutf8", 20, "bad utf8"},
		{"abcdefghij", 5, "abcde…"},
	} {
		if got := Text(tc.in, tc.limit); got != tc.want {
			t.Errorf("Text(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

func TestSecret(t *testing.T) {
	if got := Secret("echo k-1 and k-1", "k-1"); got != "echo [redacted] and [redacted]" {
		t.Errorf("Secret = %q", got)
	}
	if got := Secret("nothing", ""); got != "nothing" {
		t.Errorf("Secret with no secret = %q", got)
	}
}

func TestCredentials(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"no credentials here", "no credentials here"},
		{"got Authorization: Bearer sk-live-123 twice, bearer abc", "got Authorization: Bearer [redacted] twice, bearer [redacted]"},
		{"fetch 'https://user:pw@host.example:8080/v1/x?key=s3cret#f' failed", "fetch 'https://host.example:8080/v1/x' failed"},
		{"see (http://h/p?token=1) and ://odd", "see (http://h/p) and ://odd"},
		{"ends with bearer ", "ends with bearer "},
	} {
		if got := Credentials(tc.in); got != tc.want {
			t.Errorf("Credentials(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
