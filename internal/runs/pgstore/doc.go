// Package pgstore is the run store replicas share: run records in
// PostgreSQL, so check_run and task lookups answer on any replica, a
// restart of every replica loses no finished record, and a replica that
// dies has its runs marked failed by another.
//
// # Schema
//
// [Open] creates and migrates the schema (table promptforge_runs, versions
// in promptforge_schema) inside one transaction holding a transaction-level
// advisory lock, so replicas booting together apply each migration once and
// a replica that loses the race finds the work done. Migrations are
// append-only: a version once released never changes.
//
// # Leases
//
// Each replica holds a lease on the runs it owns (lease_until) and renews
// it every third of [Options.Lease]. The same pass marks failed, with
// [runs.MsgReplicaStopped], every running record of another replica whose
// lease has run out. A dead replica's run therefore reads failed at most
// Lease plus one pass (Lease×4/3) after its last renewal. Times are the
// replicas' clocks, which must agree to well within the lease (NTP does).
//
// # Cancellation
//
// [Store.Cancel] sends NOTIFY promptforge_cancel with the run id; every
// replica LISTENs on one connection of its own and hands the id to the
// registry, which cancels the run if it owns it. [Open] returns once that
// connection LISTENs, so a cancellation sent after every replica is up
// reaches its run. A notification sent while a replica's listening
// connection is down is lost; the listener reconnects 100 ms after the
// connection drops, doubling the wait (up to the lease) only while
// reconnecting fails.
//
// # Retention
//
// Records past [runs.RetentionOptions].RetainCompleted never answer a
// lookup (the read filters by age, exactly as the memory store's sweep),
// and each pass deletes them and the oldest finished records beyond the
// count and byte bounds, keeping the newest always.
//
// # Goroutines
//
// [Open] starts two: the keeper (leases, expiry, retention, retried
// terminal writes) and the listener. [Store.Close] stops both and waits,
// then closes the pool; the process closes the store after the registry
// has written its last records.
//
// The DSN may hold a password: it is never logged, and errors that could
// quote it have it replaced.
package pgstore
