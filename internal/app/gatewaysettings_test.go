package app

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// A fresh Ollama lists "data": null: boot goes on with an empty catalog.
// A [models] table whose id is not served gets one warning naming both ids
// and the fix (issue 10 items 2 and 3).
func TestFetchModelsEmptyListAndUnmatchedOverride(t *testing.T) {
	g := gatewaytest.New(t)
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	overrides := map[string]gateway.ModelOverride{"llama3.1:8b": {Description: "chat", Thinking: gateway.ThinkingNever}}

	g.SetModelsReply(gatewaytest.Malformed(`{"object":"list","data":null}`))
	if models, err := fetchModels(context.Background(), c, overrides, false, log); err != nil || len(models) != 0 {
		t.Fatalf("data null: %v %v", models, err)
	}

	buf.Reset()
	g.SetModels(map[string]any{"id": "llama3.1:latest", "object": "model", "owned_by": "library"})
	if _, err := fetchModels(context.Background(), c, overrides, false, log); err != nil {
		t.Fatal(err)
	}
	var warn []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "matches no served model") {
			warn = append(warn, l)
		}
	}
	want := `fix="no served model is \"llama3.1:8b\"; the server lists \"llama3.1:latest\": rename the table to [models.\"llama3.1:latest\"]"`
	if len(warn) != 1 || !strings.Contains(warn[0], "level=WARN") || !strings.Contains(warn[0], want) {
		t.Fatalf("want one warning containing %s; log:\n%s", want, buf.String())
	}
}

// [gateway].request_timeout and thinking_switch, and a model's own
// thinking_switch, reach the gateway client.
func TestPlanConfigPassesTheGatewaySettings(t *testing.T) {
	cfg, err := config.Parse([]byte(`[server]
[gateway]
url = "http://127.0.0.1:1/v1"
api_key = "k"
request_timeout = "5m"
thinking_switch = "reasoning_effort"
[models."qwen3"]
thinking_switch = "chat_template_kwargs"
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if plan.gateway.Timeout != 5*time.Minute || plan.gateway.ThinkingSwitch != gateway.ThinkingSwitchReasoningEffort {
		t.Errorf("gateway options %v", *plan.gateway)
	}
	if got := plan.overrides["qwen3"].ThinkingSwitch; got != gateway.ThinkingSwitchTemplateKwargs {
		t.Errorf("model switch %q", got)
	}
}

// config spells the switch values and owns the defaults; they must be the
// gateway's.
func TestGatewaySettingsAgreeWithTheClient(t *testing.T) {
	for _, v := range []string{config.ThinkingSwitchTemplateKwargs, config.ThinkingSwitchReasoningEffort, config.ThinkingSwitchNone} {
		if !gateway.ThinkingSwitch(v).Valid() {
			t.Errorf("config accepts thinking_switch %q, which the gateway does not know", v)
		}
	}
	if gateway.ThinkingSwitch(config.DefaultThinkingSwitch) != gateway.ThinkingSwitchTemplateKwargs {
		t.Errorf("default thinking switch %q is not what was sent before", config.DefaultThinkingSwitch)
	}
	if config.DefaultRequestTimeout != gateway.DefaultTimeout {
		t.Errorf("config.DefaultRequestTimeout %v != gateway.DefaultTimeout %v", config.DefaultRequestTimeout, gateway.DefaultTimeout)
	}
}
