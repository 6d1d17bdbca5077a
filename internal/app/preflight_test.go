package app

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/server"
)

// [models] tables for ids the gateway does not serve are usual (the example
// describes several Ollama models) and take one info line; a served model
// nothing describes still draws a warning naming what to add.
func TestFetchModelsSaysOnceWhichDescribedModelsAreNotServed(t *testing.T) {
	g := gatewaytest.New(t)
	g.SetModels(map[string]any{"id": "llama3.2:latest", "object": "model"}, map[string]any{"id": "phi4:latest", "object": "model"})
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	described := gateway.ModelOverride{Description: "A general assistant model", Context: 8192, Thinking: gateway.ThinkingNever}
	overrides := map[string]gateway.ModelOverride{"llama3.2:latest": described, "mistral:latest": described, "qwen2.5:latest": described}
	var logs bytes.Buffer
	set, err := envPlan{overrides: overrides}.fetchModels(context.Background(), c, server.NewMetrics(), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if models := set.Snapshot().Models; len(models) != 1 || models[0].ID != "llama3.2:latest" {
		t.Fatalf("models %v", models)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var warns, unserved []string
	for _, l := range lines {
		if strings.Contains(l, "level=WARN") {
			warns = append(warns, l)
		}
		if strings.Contains(l, "does not serve") {
			unserved = append(unserved, l)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "phi4:latest") ||
		len(unserved) != 1 || !strings.Contains(unserved[0], "level=INFO") || !strings.Contains(unserved[0], `models="mistral:latest, qwen2.5:latest"`) {
		t.Fatalf("logs:\n%s", logs.String())
	}
}
