package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationLock is the advisory lock key every replica takes to migrate:
// "pforge" in ASCII, unlikely to collide with another application's key.
const migrationLock int64 = 0x70666f726765

// capLock serialises the global cap's count-and-insert.
const capLock int64 = 0x70666f726766

// migrations are applied in order; migrations[i] brings the schema to
// version i+1. Append only.
var migrations = []string{
	`CREATE TABLE promptforge_runs (
		id                text PRIMARY KEY,
		prompt            text NOT NULL,
		status            text NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
		value             text NOT NULL DEFAULT '',
		error             text NOT NULL DEFAULT '',
		turns             bigint NOT NULL DEFAULT 0,
		prompt_tokens     bigint NOT NULL DEFAULT 0,
		completion_tokens bigint NOT NULL DEFAULT 0,
		elapsed_ms        bigint NOT NULL DEFAULT 0,
		owner             text NOT NULL,
		started_at        timestamptz NOT NULL,
		finished_at       timestamptz,
		lease_until       timestamptz,
		cause             text NOT NULL DEFAULT '',
		abnormal          boolean NOT NULL DEFAULT false
	);
	CREATE INDEX promptforge_runs_finished ON promptforge_runs (finished_at) WHERE finished_at IS NOT NULL;
	CREATE INDEX promptforge_runs_lease ON promptforge_runs (lease_until) WHERE status = 'running';`,
}

// SchemaVersion is the version Open migrates to.
var SchemaVersion = len(migrations)

// migrate brings the schema to SchemaVersion. It is idempotent, and safe
// when several replicas run it at once: the transaction-level advisory lock
// makes them take turns, and each reads the version under the lock.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS promptforge_schema (version integer NOT NULL)`); err != nil {
			return fmt.Errorf("create the schema version table: %w", err)
		}
		var version int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM promptforge_schema`).Scan(&version); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if version > len(migrations) {
			return fmt.Errorf("the database's run schema is version %d, newer than this server's %d: upgrade this replica to the version the others run", version, len(migrations))
		}
		for v := version; v < len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("apply schema migration %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO promptforge_schema (version) VALUES ($1)`, v+1); err != nil {
				return fmt.Errorf("record schema version %d: %w", v+1, err)
			}
		}
		return nil
	})
}
