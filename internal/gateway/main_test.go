package gateway_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns a client for s; edit may change its Options first.
func newClient(t testing.TB, s *gatewaytest.Server, edit ...func(*gateway.Options)) *gateway.Client {
	t.Helper()
	cfg := gateway.Options{BaseURL: s.URL(), APIKey: secret.MustNew(s.APIKey())}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := gateway.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func userTurn(text string) gateway.ChatRequest {
	return gateway.ChatRequest{Model: "test-model", Messages: []gateway.Message{{Role: "user", Content: text}}}
}

// asError fails the test unless err is a *gateway.Error of kind.
func asError(t *testing.T, err error, kind gateway.Kind) *gateway.Error {
	t.Helper()
	ge, ok := err.(*gateway.Error)
	if !ok {
		t.Fatalf("error %v (%T) is not a *gateway.Error", err, err)
	}
	if ge.Kind != kind {
		t.Fatalf("error kind = %v, want %v (%v)", ge.Kind, kind, err)
	}
	return ge
}
