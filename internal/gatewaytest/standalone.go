package gatewaytest

import (
	"errors"
	"fmt"
	"testing"
)

// ServerOptions configure NewServer.
type ServerOptions struct {
	// APIKey is the only bearer token the server accepts; "" makes a
	// random one, as New does.
	APIKey string
	// Logf receives one line per request the script did not plan for
	// (the lines New sends to the test log); nil discards them.
	Logf func(format string, args ...any)
}

// NewServer starts a scripted gateway on a free 127.0.0.1 port outside any
// test, for programs that serve it to tests written in other languages
// (the gatewaytest command drives end-to-end tests from Node). It is the
// same server New returns, with the same defaults; the caller owns it and
// must Close it.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.APIKey != "" {
		if err := checkToken(opts.APIKey); err != nil {
			return nil, fmt.Errorf("start the scripted gateway: %w", err)
		}
	}
	s := New(standaloneTB{logf: opts.Logf})
	if opts.APIKey != "" {
		s.key = opts.APIKey
	}
	return s, nil
}

// checkToken refuses keys that cannot travel in an Authorization header
// as one bearer credential, so a typo fails at start instead of as a 401
// on every request.
func checkToken(key string) error {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c > '~' {
			return errors.New("the API key must be visible ASCII without spaces")
		}
	}
	return nil
}

// standaloneTB lets New run outside a test. New uses its TB for three
// things: Helper (a no-op here), Cleanup (dropped: the one cleanup New
// registers is Close, which the owner of a standalone server calls itself)
// and Logf (forwarded). Any other method reaches the nil embedded TB and
// panics: a new use of the TB in this package must be given a standalone
// meaning here first.
type standaloneTB struct {
	testing.TB
	logf func(format string, args ...any)
}

func (standaloneTB) Helper()        {}
func (standaloneTB) Cleanup(func()) {}

func (tb standaloneTB) Logf(format string, args ...any) {
	if tb.logf != nil {
		tb.logf(format, args...)
	}
}

func (tb standaloneTB) Log(args ...any) { tb.Logf("%s", fmt.Sprint(args...)) }
