package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/promptforge-go/promptforge/internal/pgtest"
	"github.com/promptforge-go/promptforge/internal/runs"
)

var testPG *pgtest.Server

func TestMain(m *testing.M) {
	pgtest.Main(m, &testPG, true, nil)
}

func open(t *testing.T, ctx context.Context, dsn, replica string, lease time.Duration) *Store {
	t.Helper()
	s, err := Open(ctx, Options{DSN: dsn, Replica: replica, Lease: lease,
		Retention: runs.RetentionOptions{RetainCompleted: time.Hour}, noListen: true})
	if err != nil {
		t.Fatalf("Open(%s): %v", replica, err)
	}
	return s
}

func register(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.Register(t.Context(), runs.Stored{Result: runs.Running(id, "p", 0), Started: time.Now()}); err != nil {
		t.Fatalf("Register(%s): %v", id, err)
	}
}

// A replica that stops renewing (here: closed without finishing its run,
// which is what a killed process leaves behind) has its run marked failed
// by another within Lease×4/3, and not before its lease ends; a replica
// that keeps renewing keeps its run running however long it takes.
func TestExpiredLeaseIsMarkedFailedWithinTheBound(t *testing.T) {
	dsn := pgtest.Need(t, testPG)
	synctest.Test(t, func(t *testing.T) {
		const lease = 9 * time.Second
		a := open(t, t.Context(), dsn, "a", lease)
		b := open(t, t.Context(), dsn, "b", lease)
		defer b.Close()
		alive := open(t, t.Context(), dsn, "alive", lease)
		defer alive.Close()
		register(t, a, "dead")
		register(t, alive, "kept")
		a.Close() // a stops renewing

		lookup := func(id string) runs.Stored {
			got, ok, err := b.Lookup(context.Background(), id, time.Now())
			if !ok || err != nil {
				t.Fatalf("Lookup(%s) = %v, %v", id, ok, err)
			}
			return got
		}
		time.Sleep(lease - time.Second)
		synctest.Wait()
		if got := lookup("dead"); got.Status != runs.StatusRunning {
			t.Fatalf("inside its lease the run reads %+v; want running", got)
		}
		time.Sleep(lease/3 + 2*time.Second) // past Lease×4/3 from the last renewal
		synctest.Wait()
		got := lookup("dead")
		if got.Status != runs.StatusFailed || got.Error != runs.MsgReplicaStopped || !got.Abnormal || got.Finished.IsZero() {
			t.Fatalf("past the bound the run reads %+v; want failed: %q", got, runs.MsgReplicaStopped)
		}
		time.Sleep(5 * lease)
		synctest.Wait()
		if got := lookup("kept"); got.Status != runs.StatusRunning {
			t.Fatalf("a renewed run reads %+v; want running", got)
		}
	})
}

// Three replicas migrating one empty database at once apply each migration
// once and all come up.
func TestConcurrentBootsMigrateOnce(t *testing.T) {
	dsn := pgtest.Need(t, testPG)
	var wg sync.WaitGroup
	stores := make([]*Store, 3)
	errs := make([]error, 3)
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = Open(t.Context(), Options{DSN: dsn, Replica: fmt.Sprint("r", i)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var rows, top int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(version) FROM promptforge_schema`).Scan(&rows, &top); err != nil {
		t.Fatal(err)
	}
	if rows != SchemaVersion || top != SchemaVersion {
		t.Fatalf("schema versions: %d rows up to %d; want each of 1..%d once", rows, top, SchemaVersion)
	}
	// A later boot finds the work done.
	again, err := Open(t.Context(), Options{DSN: dsn, Replica: "late"})
	if err != nil {
		t.Fatalf("Open on a migrated database: %v", err)
	}
	again.Close()
}

func TestBadDSNIsRefusedWithoutItsPassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=1",
		"postgres://u:hunter2@127.0.0.1:notaport/db",
	} {
		_, err := Open(t.Context(), Options{DSN: dsn, Replica: "a"})
		if err == nil {
			t.Fatalf("Open(%s) succeeded", dsn)
		}
		if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "store") {
			t.Fatalf("Open error = %q; want it to name the store and not the password", err)
		}
	}
}

// A terminal record the store refused (here: its write was cancelled) is
// written by Close's last attempt, so the run's outcome is not lost to a
// replica that shuts down before its keeper's next pass; without it another
// replica would mark the run failed when the lease ran out.
func TestCloseWritesTheTerminalRecordsTheStoreRefused(t *testing.T) {
	dsn := pgtest.Need(t, testPG)
	a := open(t, t.Context(), dsn, "a", time.Hour)
	register(t, a, "held")
	refused, cancel := context.WithCancel(t.Context())
	cancel()
	done := runs.Stored{Result: runs.Completed("held", "p", "the value", 1, time.Second), Owner: "a",
		Started: time.Now().Add(-time.Second), Finished: time.Now()}
	if _, err := a.Finish(refused, done); err == nil {
		t.Fatal("Finish with a cancelled context succeeded; the test needs a refused write")
	}
	a.Close()

	b := open(t, t.Context(), dsn, "b", time.Hour)
	defer b.Close()
	got, ok, err := b.Lookup(t.Context(), "held", time.Now())
	if !ok || err != nil {
		t.Fatalf("Lookup = %v, %v", ok, err)
	}
	if got.Status != runs.StatusCompleted || got.Value != "the value" {
		t.Fatalf("after Close the run reads %+v; want its completed record", got)
	}
}
