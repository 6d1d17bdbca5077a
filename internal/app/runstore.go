package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/runs/pgstore"
	"github.com/promptforge-go/promptforge/internal/server"
)

// StepRunStore is the boot step that opens [runs].store.
const StepRunStore = "open the run store"

// runStoreTimeout bounds connecting to the store and migrating its schema
// at boot: a store that does not answer in this long fails the boot,
// rather than a server that cannot keep its runs starting anyway.
const runStoreTimeout = 30 * time.Second

// openRunStore opens the shared run store [runs].store names, or returns
// nil when the records stay in memory. The caller closes it after the
// server's registry.
func openRunStore(ctx context.Context, cfg *config.Config, metrics *server.Metrics, logger *slog.Logger) (*pgstore.Store, string, error) {
	replica := replicaName()
	if cfg.Runs.Store == nil {
		return nil, replica, nil
	}
	ctx, cancel := context.WithTimeout(ctx, runStoreTimeout)
	defer cancel()
	st, err := pgstore.Open(ctx, pgstore.Options{
		DSN:     cfg.Runs.Store.Reveal(),
		Replica: replica,
		Lease:   cfg.Runs.Lease,
		// The bounds past the window are the registry's defaults, as in
		// memory.
		Retention:     runs.RetentionOptions{RetainCompleted: cfg.Server.RetainCompleted, Logger: logger},
		GlobalMaxRuns: cfg.Runs.GlobalMaxRuns,
		Logger:        logger,
		Observe:       metrics.StoreObserver(),
	})
	if err != nil {
		return nil, "", err
	}
	logger.Info("run records are shared through PostgreSQL", "replica", replica,
		"lease", cfg.Runs.Lease.String(), "global_max_runs", cfg.Runs.GlobalMaxRuns)
	return st, replica, nil
}

// replicaName names this process in the records it owns: the host, the
// pid, and randomness, so a restarted process (same host, maybe the same
// pid in a container) never takes over a dead one's leases.
func replicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
