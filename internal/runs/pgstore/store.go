package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/promptforge-go/promptforge/internal/redact"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// DefaultLease is how long a replica's hold on its runs lasts without a
// renewal. A dead replica's runs read failed within Lease×4/3 (see the
// package doc): 13⅓ s by default, inside the 30 s an operator is promised.
const DefaultLease = 10 * time.Second

// cancelChannel is the NOTIFY channel cancellations travel on.
const cancelChannel = "promptforge_cancel"

// Log messages an operator (and the tests) match on.
const (
	msgExpired     = "marked failed the runs of a replica that stopped renewing its lease"
	msgKeeper      = "the run store's maintenance pass failed; it is retried on the next pass"
	msgListen      = "listening for cancellations failed; reconnecting"
	msgFinishRetry = "wrote a terminal record the run store had refused earlier"
)

// Options configure [Open].
type Options struct {
	// DSN is the PostgreSQL URL ([runs].store). It may hold a password.
	DSN string
	// Replica names this process in the records it owns; it must differ
	// between replicas (app makes it from host, pid and randomness).
	Replica string
	// Lease is how long an unrenewed hold on a run lasts; zero means
	// DefaultLease.
	Lease time.Duration
	// Retention bounds the finished records, as the memory store's.
	Retention runs.RetentionOptions
	// GlobalMaxRuns, when positive, caps the running records of every
	// replica together: a launch past it is refused with runs.ErrGlobalCap.
	GlobalMaxRuns int
	// Logger receives the store's lines; nil discards them.
	Logger *slog.Logger
	// Observe, when set, is told how long each store operation took
	// (op is "register", "finish", "lookup", "cancel", "sweep").
	Observe func(op string, d time.Duration)

	// noListen is set by tests that drive the keeper in a synctest bubble,
	// where a goroutine parked on a socket would stop the fake clock.
	noListen bool
}

// Store is the PostgreSQL run store. It implements runs.Store.
type Store struct {
	pool    *pgxpool.Pool
	dsn     string
	replica string
	lease   time.Duration
	ret     runs.RetentionOptions
	cap     int
	log     *slog.Logger
	observe func(string, time.Duration)

	mu sync.Mutex
	// owned are the running records this replica registered and has not
	// finished: the ids whose leases it renews.
	owned map[string]bool
	// pending are terminal records the store refused (it was unreachable),
	// written again on each pass until it takes them.
	pending map[string]runs.Stored
	// cancels are the registries the listener hands run ids to.
	cancels []func(string)
	// held is what the last pass counted.
	heldRecords int
	heldBytes   int64

	stop context.CancelFunc
	wg   sync.WaitGroup
}

var _ runs.Store = (*Store)(nil)

// Open connects to the database opts.DSN names, migrates the schema and
// starts the keeper and the listener. ctx bounds the connection and the
// migration only.
func Open(ctx context.Context, opts Options) (*Store, error) {
	cfg, err := parseDSN(opts.DSN)
	if err != nil {
		return nil, err
	}
	if opts.Replica == "" {
		return nil, errors.New("open the run store: no replica name was given")
	}
	if opts.Lease < 0 {
		return nil, fmt.Errorf("open the run store: the lease is %s; it must be positive", opts.Lease)
	}
	lease := opts.Lease
	if lease == 0 {
		lease = DefaultLease
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the run store: %s", scrub(err, opts.DSN))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to the run store: %s; check [runs].store and that PostgreSQL is running", scrub(err, opts.DSN))
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("prepare the run store's schema: %s", scrub(err, opts.DSN))
	}
	s := &Store{
		pool:    pool,
		dsn:     opts.DSN,
		replica: opts.Replica,
		lease:   lease,
		ret:     opts.Retention.Normalised(),
		cap:     opts.GlobalMaxRuns,
		log:     logger,
		observe: opts.Observe,
		owned:   make(map[string]bool),
		pending: make(map[string]runs.Stored),
	}
	if s.observe == nil {
		s.observe = func(string, time.Duration) {}
	}
	var listening *pgx.Conn
	if !opts.noListen {
		// LISTEN before Open returns: a notification sent before it is
		// lost, so a cancellation sent as soon as the replicas are up
		// would otherwise miss this one.
		if listening, err = s.listenConn(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("listen for cancellations on the run store: %s; check that the [runs].store user may LISTEN", scrub(err, opts.DSN))
		}
	}
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.wg.Add(1)
	go s.keep(bg)
	if listening != nil {
		s.wg.Add(1)
		go s.listen(bg, listening)
	}
	return s, nil
}

// finalWriteTimeout bounds Close's last attempt at the terminal records
// the store refused earlier: long enough for a database that has just
// come back, short enough not to hold a shutdown.
const finalWriteTimeout = 5 * time.Second

// Close stops the keeper and the listener, waits for them, makes one last
// bounded attempt (finalWriteTimeout) at the terminal records the store
// refused while it was unreachable, and closes the pool. A record still
// unwritten is logged: its run stays running in the store until its lease
// runs out, when another replica marks it failed although its outcome was
// known here. The runs this replica still owns keep their leases until they
// run out the same way; the registry is closed first, so normally there
// are none.
func (s *Store) Close() {
	s.stop()
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), finalWriteTimeout)
	defer cancel()
	if err := s.writePending(ctx); err != nil {
		s.mu.Lock()
		left := len(s.pending)
		s.mu.Unlock()
		s.log.Warn("closing the run store with terminal records unwritten; other replicas will mark those runs failed when their leases run out",
			"records", left, "error", err.Error())
	}
	s.pool.Close()
}

// Health reports whether the database answers.
func (s *Store) Health(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("the run store does not answer: %s", scrub(err, s.dsn))
	}
	return nil
}

// timed reports op's duration to Observe.
func (s *Store) timed(op string) func() {
	start := time.Now()
	return func() { s.observe(op, time.Since(start)) }
}

const columns = `id, prompt, status, value, error, turns, prompt_tokens, completion_tokens,
	elapsed_ms, owner, started_at, finished_at, cause, abnormal`

// Register implements runs.Store.
func (s *Store) Register(ctx context.Context, rec runs.Stored) error {
	defer s.timed("register")()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if s.cap > 0 {
			// Count and insert under one lock, so two replicas cannot
			// both take the last slot.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, capLock); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM promptforge_runs WHERE status = 'running'`).Scan(&n); err != nil {
				return err
			}
			if n >= s.cap {
				return fmt.Errorf("%w: %d runs are going, the [runs].global_max_runs cap", runs.ErrGlobalCap, n)
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO promptforge_runs (id, prompt, status, owner, started_at, lease_until)
			VALUES ($1, $2, 'running', $3, $4, $5) ON CONFLICT (id) DO NOTHING`,
			rec.RunID, rec.Prompt, s.replica, rec.Started, rec.Started.Add(s.lease))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return runs.ErrDuplicateRun
		}
		return nil
	})
	switch {
	case errors.Is(err, runs.ErrDuplicateRun), errors.Is(err, runs.ErrGlobalCap):
		return err
	case err != nil:
		return fmt.Errorf("write the running record: %s", scrub(err, s.dsn))
	}
	s.mu.Lock()
	s.owned[rec.RunID] = true
	s.mu.Unlock()
	return nil
}

// Finish implements runs.Store. A record already terminal (another replica
// marked it failed when this one's lease ran out) stands and is returned.
// When the store cannot be reached the record is kept and written again by
// the keeper, and the error returned.
func (s *Store) Finish(ctx context.Context, rec runs.Stored) (runs.Stored, error) {
	defer s.timed("finish")()
	standing, err := s.finish(ctx, rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.pending[rec.RunID] = rec
		return rec, err
	}
	delete(s.owned, rec.RunID)
	delete(s.pending, rec.RunID)
	return standing, nil
}

func (s *Store) finish(ctx context.Context, rec runs.Stored) (runs.Stored, error) {
	row := s.pool.QueryRow(ctx, `UPDATE promptforge_runs SET status = $2, value = $3, error = $4, turns = $5,
			prompt_tokens = $6, completion_tokens = $7, elapsed_ms = $8, finished_at = $9, cause = $10,
			abnormal = $11, lease_until = NULL
		WHERE id = $1 AND status = 'running'
		RETURNING `+columns,
		rec.RunID, string(rec.Status), rec.Value, rec.Error, int64(rec.Turns),
		int64(rec.Tokens.Prompt), int64(rec.Tokens.Completion), int64(rec.ElapsedMS),
		rec.Finished, runs.CauseName(rec.Cause), rec.Abnormal)
	got, err := scan(row)
	if errors.Is(err, pgx.ErrNoRows) {
		// Already terminal: first write wins. Read what stands.
		got, err = scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM promptforge_runs WHERE id = $1`, rec.RunID))
		if errors.Is(err, pgx.ErrNoRows) {
			// Evicted already, or never stored: nothing stands.
			return rec, nil
		}
	}
	if err != nil {
		return rec, fmt.Errorf("write run %s's terminal record: %w", rec.RunID, err)
	}
	return got, nil
}

// Lookup implements runs.Store: a finished record past its retention
// window reads as unknown, whether or not a pass has deleted it yet.
func (s *Store) Lookup(ctx context.Context, id string, now time.Time) (runs.Stored, bool, error) {
	defer s.timed("lookup")()
	got, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM promptforge_runs
		WHERE id = $1 AND (finished_at IS NULL OR finished_at > $2)`, id, now.Add(-s.ret.RetainCompleted)))
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.Stored{}, false, nil
	}
	if err != nil {
		return runs.Stored{}, false, fmt.Errorf("read run %s: %s", id, scrub(err, s.dsn))
	}
	return got, true, nil
}

// Cancel implements runs.Store: every replica hears the notification and
// the one that owns the run cancels it.
func (s *Store) Cancel(ctx context.Context, id string) error {
	defer s.timed("cancel")()
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, cancelChannel, id); err != nil {
		return fmt.Errorf("send the cancellation of run %s: %s", id, scrub(err, s.dsn))
	}
	return nil
}

// OnCancel implements runs.Store.
func (s *Store) OnCancel(f func(id string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancels = append(s.cancels, f)
}

// delivered hands a cancelled run id to every registry over the store.
func (s *Store) delivered(id string) {
	s.mu.Lock()
	cancels := slices.Clone(s.cancels)
	s.mu.Unlock()
	for _, f := range cancels {
		f(id)
	}
}

// Held implements runs.Store with what the last pass counted.
func (s *Store) Held() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldRecords, s.heldBytes
}

func scan(row pgx.Row) (runs.Stored, error) {
	var (
		st                       runs.Stored
		status, cause            string
		turns, pt, ct, elapsedMS int64
		finished                 *time.Time
	)
	if err := row.Scan(&st.RunID, &st.Prompt, &status, &st.Value, &st.Error, &turns, &pt, &ct,
		&elapsedMS, &st.Owner, &st.Started, &finished, &cause, &st.Abnormal); err != nil {
		return runs.Stored{}, err
	}
	st.Status = runs.Status(status)
	st.Turns = uint32(turns)
	st.Tokens = runs.Tokens{Prompt: uint64(pt), Completion: uint64(ct)}
	st.ElapsedMS = uint64(elapsedMS)
	st.Cause = runs.CauseOf(cause)
	if finished != nil {
		st.Finished = *finished
	}
	return st, nil
}

// scrub is err's text with the DSN's password, if any, replaced: driver
// errors may quote the connection string.
// CheckDSN reports what Open would refuse in dsn before connecting (an
// sslmode or a parameter pgx does not know), without contacting anything,
// so `check --offline` fails on the URL `serve` would fail to boot with.
func CheckDSN(dsn string) error {
	_, err := parseDSN(dsn)
	return err
}

func parseDSN(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("read [runs].store: %s; write it as postgres://user:password@host:port/database", scrub(err, dsn))
	}
	return cfg, nil
}

func scrub(err error, dsn string) string {
	text := err.Error()
	if u, perr := url.Parse(dsn); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			text = redact.Secret(text, pw)
		}
	}
	return redact.Credentials(text)
}
