package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretRendersRedacted(t *testing.T) {
	s, err := NewSecret("hunter2")
	if err != nil {
		t.Fatal(err)
	}
	if s.Reveal() != "hunter2" {
		t.Errorf("Reveal = %q", s.Reveal())
	}
	for _, tc := range []struct{ format, want string }{
		{"%v", "redacted"}, {"%s", "redacted"}, {"%+v", "redacted"}, {"%#v", "Secret(redacted)"},
		{"%q", "redacted"}, {"%x", "redacted"}, {"%d", "redacted"},
	} {
		if got := fmt.Sprintf(tc.format, s); got != tc.want {
			t.Errorf("Sprintf(%q) = %q, want %q", tc.format, got, tc.want)
		}
	}
	if got := s.String(); got != "redacted" {
		t.Errorf("String = %q", got)
	}

	// Inside structs, through JSON, and in logs.
	type holder struct {
		Key  Secret
		PKey *Secret
	}
	h := holder{Key: s, PKey: &s}
	for _, format := range []string{"%v", "%+v", "%#v"} {
		if out := fmt.Sprintf(format, h); strings.Contains(out, "hunter2") {
			t.Errorf("Sprintf(%q) leaked: %s", format, out)
		}
	}
	js, err := json.Marshal(h)
	if err != nil || string(js) != `{"Key":"redacted","PKey":"redacted"}` {
		t.Errorf("json = %s, %v", js, err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "key", s, "ptr", &s)
	if strings.Contains(logs.String(), "hunter2") || !strings.Contains(logs.String(), "key=redacted") {
		t.Errorf("log = %s", logs.String())
	}
	cfg := mustParse(t, strings.Replace(minimal, "[server]", "[server]\napi_key = \"hunter2\"", 1), nil)
	for _, format := range []string{"%v", "%+v", "%#v"} {
		if out := fmt.Sprintf(format, cfg); strings.Contains(out, "hunter2") || strings.Contains(out, "gateway-key") {
			t.Errorf("Sprintf(%q, config) leaked a secret: %s", format, out)
		}
	}
}

func TestSecretRefusesBlank(t *testing.T) {
	for _, v := range []string{"", " ", "   ", "\t\n"} {
		if s, err := NewSecret(v); err == nil {
			t.Errorf("NewSecret(%q) = %v, want an error", v, s)
		}
	}
	s, err := NewSecret(" padded ")
	if err != nil || s.Reveal() != " padded " {
		t.Errorf("NewSecret keeps the value untrimmed: %q, %v", s.Reveal(), err)
	}
	var zero Secret
	if !zero.IsZero() || s.IsZero() {
		t.Error("IsZero")
	}
}
