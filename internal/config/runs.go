package config

import (
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/promptforge-go/promptforge/internal/humantime"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// DefaultRunsLease is [runs].lease's default: a replica that dies has its
// runs read failed within lease×4/3, 13⅓ s, inside the 30 s promised.
const DefaultRunsLease = 10 * time.Second

// maxRunsLease keeps the expiry bound (lease×4/3) at or below 30 s.
const maxRunsLease = 22500 * time.Millisecond

// Runs is the [runs] table: where run records are kept.
type Runs struct {
	// Store is the PostgreSQL URL the records are shared through; nil
	// (the key absent or empty) keeps them in memory. It may hold a
	// password, hence a Secret.
	Store *secret.Secret
	// Lease is how long a replica's unrenewed hold on its runs lasts.
	Lease time.Duration
	// GlobalMaxRuns caps the runs of every replica together; 0 is no cap.
	GlobalMaxRuns int
}

type rawRuns struct {
	Store         *string `toml:"store"`
	Lease         *string `toml:"lease"`
	GlobalMaxRuns *int64  `toml:"global_max_runs"`
}

var runsKeys = []string{"store", "lease", "global_max_runs"}

func runsExpectedType(key string) string {
	switch key {
	case "store":
		return `a string such as "postgres://user:${PGPASSWORD}@db:5432/promptforge"`
	case "lease":
		return `a duration string such as "10s"`
	case "global_max_runs":
		return "a non-negative integer"
	}
	return ""
}

func (p *parser) buildRuns(r *rawRuns, dst *Runs) error {
	at := func(k string) tomlPath { return tomlPath{"runs", k} }
	if r == nil {
		return nil
	}
	if r.Store != nil && *r.Store != "" {
		// Never quote the value: it may hold a password.
		u, err := url.Parse(*r.Store)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			return p.fail(at("store"), "[runs].store must be a PostgreSQL URL, postgres://user:password@host:port/database (put the password in ${VAR}); leave it out to keep runs in memory")
		}
		s := secret.MustNew(*r.Store)
		dst.Store = &s
	}
	if r.Lease != nil {
		v, err := humantime.Parse(*r.Lease)
		if err != nil {
			return p.fail(at("lease"), fmt.Sprintf("[runs].lease is not a duration: %v", err))
		}
		if v < 300*time.Millisecond || v > maxRunsLease {
			return p.fail(at("lease"), fmt.Sprintf("[runs].lease is %s; it must be between 300ms and %s, so that a dead replica's runs read failed within 30s", humantime.Format(v), humantime.Format(maxRunsLease)))
		}
		dst.Lease = v
	}
	if r.GlobalMaxRuns != nil {
		n := *r.GlobalMaxRuns
		if n < 0 || n > math.MaxInt32 {
			return p.fail(at("global_max_runs"), fmt.Sprintf("[runs].global_max_runs must be 0 (no cap) or more: %d", n))
		}
		dst.GlobalMaxRuns = int(n)
	}
	return nil
}

// diffRuns names the [runs] settings that differ; all are fixed at boot.
func diffRuns(a, b Runs, add func(bool, string)) {
	add(!sameSecret(a.Store, b.Store), "[runs].store")
	add(a.Lease != b.Lease, "[runs].lease")
	add(a.GlobalMaxRuns != b.GlobalMaxRuns, "[runs].global_max_runs")
}
