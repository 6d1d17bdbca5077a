package app

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
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

	plan := envPlan{overrides: overrides}

	g.SetModelsReply(gatewaytest.Malformed(`{"object":"list","data":null}`))
	set, err := plan.fetchModels(context.Background(), c, server.NewMetrics(), log)
	if err != nil || len(set.Snapshot().Models) != 0 {
		t.Fatalf("data null: %v", err)
	}

	buf.Reset()
	g.SetModels(map[string]any{"id": "llama3.1:latest", "object": "model", "owned_by": "library"})
	set, err = plan.fetchModels(context.Background(), c, server.NewMetrics(), log)
	if err != nil {
		t.Fatal(err)
	}
	if unmatched := set.Snapshot().Unmatched; len(unmatched) != 1 || unmatched[0].Closest != "llama3.1:latest" {
		t.Fatalf("unmatched %+v", unmatched)
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
// thinking_switch, reach the gateway client; [server].max_concurrent_runs
// sizes its transport's idle pool (gateway.NewTransportFor: a turn per
// run slot can be in flight at once).
func TestPlanConfigPassesTheGatewaySettings(t *testing.T) {
	cfg, err := config.Parse([]byte(`[server]
max_concurrent_runs = 1000
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
	if plan.runs != 1000 {
		t.Errorf("the gateway transport is planned for %d runs, want [server].max_concurrent_runs (1000)", plan.runs)
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

// The user's view of a mismatched [models] table: the run's binding
// failure names both ids and the fix, as the boot log does.
func TestRunNamesTheUnmatchedModelTable(t *testing.T) {
	g := gatewaytest.New(t)
	g.SetModels(map[string]any{"id": "llama3.1:latest", "object": "model", "owned_by": "library"})
	writer := promptFile("writer", "Write a line.", "",
		"# Writer\n\n```lua\nmodels.default(\"w\", \"General chat model\")\n```\n\n## Write\n\nWrite one line.\n")
	path := servertest.ConfigDir(t, "", g, map[string]string{"writer.md": writer})
	table := "\n[models.\"llama3.1:8b\"]\ndescription = \"General chat model\"\ncontext = 8192\nthinking = \"never\"\n"
	if err := os.WriteFile(path, append(mustRead(t, path), table...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := RunOnce(context.Background(), RunOptions{Target: "writer", ConfigPath: path})
	want := `no served model is "llama3.1:8b"; the server lists "llama3.1:latest": rename the table to [models."llama3.1:latest"]`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `lists 1 model(s) but none can be bound: llama3.1:latest: no description`) {
		t.Fatalf("run error %v\nwant it to contain %s", err, want)
	}
}
