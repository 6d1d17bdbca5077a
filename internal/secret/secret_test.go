package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretRendersRedacted(t *testing.T) {
	s, err := New("hunter2")
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
}

func TestSecretRefusesBlank(t *testing.T) {
	for _, v := range []string{"", " ", "   ", "\t\n"} {
		if s, err := New(v); err == nil {
			t.Errorf("New(%q) = %v, want an error", v, s)
		}
	}
	s, err := New(" padded ")
	if err != nil || s.Reveal() != " padded " {
		t.Errorf("New keeps the value untrimmed: %q, %v", s.Reveal(), err)
	}
	var zero Secret
	if !zero.IsZero() || s.IsZero() {
		t.Error("IsZero")
	}
}

func TestMustNew(t *testing.T) {
	if MustNew("k").Reveal() != "k" {
		t.Error("MustNew lost the value")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustNew accepted a blank value")
		}
	}()
	MustNew(" ")
}
