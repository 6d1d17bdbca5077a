package app

import (
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gateway"
)

// modelOverrides translates prompts.toml's [models."<id>"] tables, which
// config keeps as its own plain values (it imports no gateway), into the
// overrides gateway.Client.Models merges into the served catalog. config
// has already checked every value, and its thinking, tool_dialect and
// thinking_switch spellings are the gateway's, so the translation is a
// change of type.
func modelOverrides(t config.ModelTable) map[string]gateway.ModelOverride {
	out := make(map[string]gateway.ModelOverride, len(t))
	for id, s := range t {
		out[id] = gateway.ModelOverride{
			Description: s.Description,
			Context:     s.Context,
			Thinking:    gateway.Thinking(s.Thinking),
			Dialect:     gateway.Dialect(s.ToolDialect),
			// "" leaves the gateway-wide [gateway].thinking_switch.
			ThinkingSwitch: gateway.ThinkingSwitch(s.ThinkingSwitch),
		}
	}
	return out
}
