package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRunsTable(t *testing.T) {
	const base = "[server]\n[gateway]\nurl = \"http://h/v1\"\napi_key = \"k\"\n[runs]\n"
	env := vars(map[string]string{"PGPASS": "s3cret"})
	cfg, err := Parse([]byte(base+`store = "postgres://pf:${PGPASS}@db:5432/pf"`+"\nlease = \"15s\"\nglobal_max_runs = 12\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runs.Store == nil || cfg.Runs.Store.Reveal() != "postgres://pf:s3cret@db:5432/pf" ||
		cfg.Runs.Lease != 15*time.Second || cfg.Runs.GlobalMaxRuns != 12 {
		t.Fatalf("[runs] = %+v", cfg.Runs)
	}
	if printed := fmt.Sprintf("%+v %v", cfg, cfg.Runs); strings.Contains(printed, "s3cret") {
		t.Fatalf("the store's password is printed: %s", printed)
	}
	// An empty store keeps runs in memory, like an absent one.
	cfg, err = Parse([]byte(base+`store = ""`+"\n"), env)
	if err != nil || cfg.Runs.Store != nil || cfg.Runs.Lease != DefaultRunsLease {
		t.Fatalf("empty store: %+v, %v; want memory and the default lease", cfg, err)
	}
	for _, tt := range []struct{ body, want string }{
		{`store = "mysql://u:hunter2@db/x"`, "must be a PostgreSQL URL"},
		{`store = "postgres://u:hunter2@/x"`, "must be a PostgreSQL URL"},
		{`lease = "1m"`, "within 30s"},
		{`lease = "10ms"`, "between 300ms"},
		{`global_max_runs = -1`, "0 (no cap) or more"},
		{`shared = true`, "[runs] takes store, lease, global_max_runs"},
	} {
		_, err := Parse([]byte(base+tt.body+"\n"), env)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %v; want one containing %q and no password", tt.body, err, tt.want)
		}
	}
}
