package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/promptforge-go/promptforge/internal/runs"
)

// keep runs a maintenance pass every third of the lease until ctx ends.
func (s *Store) keep(ctx context.Context) {
	defer s.wg.Done()
	tick := time.NewTicker(s.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn(msgKeeper, "error", err.Error())
		}
	}
}

// Sweep is one maintenance pass at the current time: renew this replica's
// leases, write the terminal records the store refused earlier, mark failed
// the runs of replicas whose leases ran out, and apply the retention
// bounds. The keeper calls it every third of the lease.
func (s *Store) Sweep(ctx context.Context) error {
	defer s.timed("sweep")()
	now := time.Now()
	s.mu.Lock()
	owned := make([]string, 0, len(s.owned))
	for id := range s.owned {
		owned = append(owned, id)
	}
	s.mu.Unlock()

	if len(owned) > 0 {
		if _, err := s.pool.Exec(ctx, `UPDATE promptforge_runs SET lease_until = $2
			WHERE id = ANY($1) AND status = 'running'`, owned, now.Add(s.lease)); err != nil {
			return fmt.Errorf("renew this replica's leases: %s", scrub(err, s.dsn))
		}
	}
	if err := s.writePending(ctx); err != nil {
		return err
	}
	if err := s.expire(ctx, now); err != nil {
		return err
	}
	return s.retain(ctx, now)
}

// expire marks failed every running record of another replica whose lease
// ended before now. This replica's own records are left alone: while it
// runs it renews them, and if it could not, its own registry still holds
// the run and will write its end.
func (s *Store) expire(ctx context.Context, now time.Time) error {
	rows, err := s.pool.Query(ctx, `UPDATE promptforge_runs SET status = 'failed', error = $3,
			finished_at = $1, abnormal = true, lease_until = NULL,
			elapsed_ms = greatest(0, floor(extract(epoch FROM ($1 - started_at)) * 1000))::bigint
		WHERE status = 'running' AND lease_until < $1 AND owner <> $2
		RETURNING id, owner`, now, s.replica, runs.MsgReplicaStopped)
	if err != nil {
		return fmt.Errorf("mark expired runs failed: %s", scrub(err, s.dsn))
	}
	type expired struct{ id, owner string }
	done, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (expired, error) {
		var e expired
		return e, r.Scan(&e.id, &e.owner)
	})
	if err != nil {
		return fmt.Errorf("mark expired runs failed: %s", scrub(err, s.dsn))
	}
	for _, e := range done {
		s.log.Info(msgExpired, "run_id", e.id, "replica", e.owner)
	}
	return nil
}

// retain deletes the finished records past their window and the oldest
// beyond the count and byte bounds (the newest is always kept, as in
// memory), then counts what is held.
func (s *Store) retain(ctx context.Context, now time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM promptforge_runs WHERE finished_at <= $1`,
		now.Add(-s.ret.RetainCompleted)); err != nil {
		return fmt.Errorf("delete records past retain_completed: %s", scrub(err, s.dsn))
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM promptforge_runs WHERE id IN (
			SELECT id FROM (
				SELECT id,
					row_number() OVER w AS n,
					sum(octet_length(value) + octet_length(error)) OVER w AS bytes
				FROM promptforge_runs WHERE finished_at IS NOT NULL
				WINDOW w AS (ORDER BY finished_at DESC, id DESC)
			) ranked WHERE n > 1 AND (n > $1 OR bytes > $2))`,
		s.ret.MaxRetainedRuns, s.ret.MaxRetainedBytes); err != nil {
		return fmt.Errorf("apply the retention bounds: %s", scrub(err, s.dsn))
	}
	var (
		n     int
		bytes int64
	)
	if err := s.pool.QueryRow(ctx, `SELECT count(*),
			coalesce(sum(octet_length(value) + octet_length(error)) FILTER (WHERE finished_at IS NOT NULL), 0)
		FROM promptforge_runs`).Scan(&n, &bytes); err != nil {
		return fmt.Errorf("count the held records: %s", scrub(err, s.dsn))
	}
	s.mu.Lock()
	s.heldRecords, s.heldBytes = n, bytes
	s.mu.Unlock()
	return nil
}

// listenBackoff is the first wait before reconnecting the listener; it
// doubles on each failed attempt, up to the lease.
const listenBackoff = 100 * time.Millisecond

// listen waits for cancellations on conn (LISTENing already: Open made
// it, so a cancellation sent once Open has returned is heard) and hands
// each run id to the registry. When the connection fails it reconnects,
// with backoff (up to the lease) between failed attempts, until ctx ends.
// A connection that was listening resets the backoff: the wait after it
// drops is the first one again, since every notification sent until the
// next LISTEN is lost.
func (s *Store) listen(ctx context.Context, conn *pgx.Conn) {
	defer s.wg.Done()
	backoff := listenBackoff
	for {
		var err error
		if conn == nil {
			conn, err = s.listenConn(ctx)
		}
		if conn != nil {
			backoff = listenBackoff
			err = s.wait(ctx, conn)
			conn.Close(context.Background())
			conn = nil
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn(msgListen, "error", scrub(err, s.dsn), "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, s.lease)
	}
}

// listenConn takes a connection out of the pool for good and LISTENs on
// it: it stays in LISTEN, and closing it leaves no session listening.
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	c := pooled.Hijack()
	if _, err := c.Exec(ctx, `LISTEN `+cancelChannel); err != nil {
		c.Close(context.Background())
		return nil, err
	}
	return c, nil
}

// wait hands each notification on c to the registries until c fails or
// ctx ends.
func (s *Store) wait(ctx context.Context, c *pgx.Conn) error {
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.delivered(n.Payload)
	}
}

// writePending writes the terminal records the store refused earlier, and
// forgets each one written; the first failure stops it.
func (s *Store) writePending(ctx context.Context) error {
	s.mu.Lock()
	pending := make([]runs.Stored, 0, len(s.pending))
	for _, rec := range s.pending {
		pending = append(pending, rec)
	}
	s.mu.Unlock()
	for _, rec := range pending {
		if _, err := s.finish(ctx, rec); err != nil {
			return fmt.Errorf("write a held terminal record: %s", scrub(err, s.dsn))
		}
		s.mu.Lock()
		delete(s.pending, rec.RunID)
		delete(s.owned, rec.RunID)
		s.mu.Unlock()
		s.log.Info(msgFinishRetry, "run_id", rec.RunID)
	}
	return nil
}
