package app

import (
	"testing"

	"github.com/promptforge-go/promptforge/internal/config"
)

// serve sizes the gateway transport's idle pool by its run slots
// (gateway.NewTransportFor): a turn per slot can be in flight at once.
func TestPlanConfigSizesTheGatewayPoolByRunSlots(t *testing.T) {
	cfg, err := config.Parse([]byte(`[server]
max_concurrent_runs = 1000
[gateway]
url = "http://127.0.0.1:1/v1"
api_key = "k"
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if plan.runs != 1000 {
		t.Errorf("the gateway transport is planned for %d runs, want [server].max_concurrent_runs (1000)", plan.runs)
	}
}
