package secret

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// redacted is what every rendering of a Secret prints (mcp-server §2.7).
const redacted = "redacted"

// errBlankSecret is returned by New for an empty or whitespace-only
// value: a blank credential would authenticate nothing and is always a
// mistake in the configuration.
var errBlankSecret = errors.New("a secret must not be empty or whitespace-only")

// Secret holds a credential ([server].api_key, [gateway].api_key). Every
// way Go renders a value (fmt verbs, slog, encoding.TextMarshaler, and so
// JSON) prints "redacted", so a secret cannot leak through a log line or a
// debug dump; Reveal is the one deliberate way to read it. The zero Secret
// holds nothing and reveals "".
type Secret struct {
	value string
}

// New wraps v, refusing a blank value. v is kept as given, untrimmed.
func New(v string) (Secret, error) {
	if strings.TrimSpace(v) == "" {
		return Secret{}, errBlankSecret
	}
	return Secret{value: v}, nil
}

// Reveal returns the credential. Call it only where the value is sent or
// compared, never to log it.
func (s Secret) Reveal() string { return s.value }

// MustNew is New for a value known to be non-blank (a literal, a test
// key); it panics on a blank one, as regexp.MustCompile does on a bad
// pattern.
func MustNew(v string) Secret {
	s, err := New(v)
	if err != nil {
		panic("secret.MustNew: " + err.Error())
	}
	return s
}

// IsZero reports whether s holds no value (the zero Secret).
func (s Secret) IsZero() bool { return s.value == "" }

// String implements fmt.Stringer.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer for %#v.
func (s Secret) GoString() string { return "Secret(" + redacted + ")" }

// Format implements fmt.Formatter so that no verb (%d, %x, %q ...) falls
// through to printing the struct's field.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(redacted))
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText implements encoding.TextMarshaler; JSON, TOML and YAML
// encoders use it, so a serialized Secret is never the credential.
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
