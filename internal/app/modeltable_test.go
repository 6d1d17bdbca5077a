package app

import (
	"reflect"
	"testing"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gateway"
)

// Every value config accepts in a [models."<id>"] table is one the gateway
// knows: config spells thinking and tool_dialect itself, since it may not
// import the gateway.
func TestModelOverridesTranslateEveryAcceptedValue(t *testing.T) {
	table := config.ModelTable{
		"a": {Description: "d", Context: 4096, Thinking: "never", ToolDialect: config.ToolDialectOpenAI},
		"b": {Thinking: "always", ToolDialect: config.ToolDialectGemma3},
		"c": {Thinking: "switchable"},
		"d": {},
		"e": {ThinkingSwitch: config.ThinkingSwitchNone},
		"f": {ThinkingSwitch: config.ThinkingSwitchReasoningEffort},
	}
	want := map[string]gateway.ModelOverride{
		"a": {Description: "d", Context: 4096, Thinking: gateway.ThinkingNever, Dialect: gateway.DialectOpenAI},
		"b": {Thinking: gateway.ThinkingAlways, Dialect: gateway.DialectGemma3},
		"c": {Thinking: gateway.ThinkingSwitchable},
		"d": {},
		"e": {ThinkingSwitch: gateway.ThinkingSwitchNone},
		"f": {ThinkingSwitch: gateway.ThinkingSwitchReasoningEffort},
	}
	if got := modelOverrides(table); !reflect.DeepEqual(got, want) {
		t.Errorf("modelOverrides = %+v, want %+v", got, want)
	}
	if got := modelOverrides(nil); len(got) != 0 {
		t.Errorf("modelOverrides(nil) = %v", got)
	}
}

// config owns [gateway].timeout and its default; the gateway client's
// zero value means the same for hosts without a prompts.toml (the run
// command). config may not import gateway, so the value is written in
// both; this keeps them equal.
func TestGatewayTimeoutDefaultsAgree(t *testing.T) {
	if config.DefaultGatewayTimeout != gateway.DefaultModelsTimeout {
		t.Errorf("config.DefaultGatewayTimeout %v != gateway.DefaultModelsTimeout %v", config.DefaultGatewayTimeout, gateway.DefaultModelsTimeout)
	}
}
