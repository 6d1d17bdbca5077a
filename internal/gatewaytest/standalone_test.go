package gatewaytest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

func TestNewServerServesTheScriptedGatewayWithTheGivenKey(t *testing.T) {
	var (
		mu    sync.Mutex
		lines []string
	)
	s, err := gatewaytest.NewServer(gatewaytest.ServerOptions{
		APIKey: "standalone-key",
		Logf: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, fmt.Sprintf(format, args...))
		},
	})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	defer s.Close()
	ctx := context.Background()

	if got := s.APIKey(); got != "standalone-key" {
		t.Fatalf("APIKey() = %q, want the configured key", got)
	}
	if code, body := call(t, ctx, s, "GET", "/models", ""); code != 200 || !strings.Contains(string(body), `"test-model"`) {
		t.Fatalf("GET /models with the configured key = %d %s, want 200 listing the default test-model", code, body)
	}
	if code, _ := call(t, ctx, s, "GET", "/models", "", "some-other-key"); code != 401 {
		t.Fatalf("GET /models with another key = %d, want 401", code)
	}

	s.Enqueue(gatewaytest.Text("scripted"))
	if code, body := call(t, ctx, s, "POST", "/chat/completions", chatBody); code != 200 || !strings.Contains(string(body), `"scripted"`) {
		t.Fatalf("scripted chat = %d %s, want 200 with the scripted text", code, body)
	}
	if code, _ := call(t, ctx, s, "POST", "/chat/completions", chatBody); code != 500 {
		t.Fatalf("unscripted chat = %d, want 500", code)
	}
	mu.Lock()
	got := strings.Join(lines, "\n")
	mu.Unlock()
	if !strings.Contains(got, "no scripted") {
		t.Fatalf("Logf lines = %q, want the unscripted request reported", got)
	}
}

func TestNewServerMakesARandomKeyWhenNoneIsGiven(t *testing.T) {
	s, err := gatewaytest.NewServer(gatewaytest.ServerOptions{})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.APIKey(), "gatewaytest-") {
		t.Fatalf("APIKey() = %q, want a generated gatewaytest- key", s.APIKey())
	}
	// No Logf: an unscripted request must still be answered, not crash.
	if code, _ := call(t, context.Background(), s, "POST", "/chat/completions", chatBody); code != 500 {
		t.Fatalf("unscripted chat without Logf = %d, want 500", code)
	}
}

func TestNewServerRefusesAKeyThatCannotBeABearerToken(t *testing.T) {
	for _, key := range []string{"has space", "tab\tkey", "naïve", "line\nbreak"} {
		if s, err := gatewaytest.NewServer(gatewaytest.ServerOptions{APIKey: key}); err == nil {
			s.Close()
			t.Errorf("NewServer(APIKey %q) succeeded, want an error", key)
		}
	}
}
