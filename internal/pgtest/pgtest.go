// Package pgtest starts a real PostgreSQL for tests: initdb into a temporary
// directory, the server on a free loopback port with its unix socket in the
// same directory, and one fresh database per test.
//
// A test binary starts at most one server (in TestMain, through [Main]) and
// stops it when its tests end; nothing else is started. When the binaries
// are missing, tests that need the server fail under CI=true (.ci/run
// installs Debian's postgresql package) and are skipped elsewhere, with a
// message saying how to install it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

// Server is one running PostgreSQL.
type Server struct {
	bin, dir string
	port     int
	asUser   string // run the binaries as this user (root may not run them)
	dbs      atomic.Int64
}

// ErrMissing: no PostgreSQL binaries were found.
var ErrMissing = errors.New("PostgreSQL is not installed: install Debian's postgresql package (apt-get install -y postgresql), or put initdb, pg_ctl and postgres on PATH")

// binDir finds the directory holding initdb, pg_ctl and postgres: PATH
// first, then Debian's /usr/lib/postgresql/*/bin, newest version first.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return "", ErrMissing
	}
	// Glob sorts lexically; numeric versions of equal width sort right.
	return filepath.Dir(matches[len(matches)-1]), nil
}

// Start initialises and starts a server under a new temporary directory.
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("make the PostgreSQL test directory: %w", err)
	}
	s := &Server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as postgres, on a
		// directory that user owns.
		s.asUser = "postgres"
		u, err := user.Lookup(s.asUser)
		if err != nil {
			return nil, fmt.Errorf("running as root, PostgreSQL must run as the postgres user, which does not exist: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("hand the test directory to postgres: %w", err)
		}
	}
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if out, err := s.cmd("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	opts := fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", s.port, dir)
	if out, err := s.cmd("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, log)
	}
	return s, nil
}

func (s *Server) cmd(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if s.asUser != "" {
		return exec.Command("runuser", append([]string{"-u", s.asUser, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// Stop stops the server (fast shutdown) and removes its directory.
func (s *Server) Stop() error {
	out, err := s.cmd("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "fast", "-w", "stop").CombinedOutput()
	os.RemoveAll(s.dir)
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// DSN is the connection string for database db.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// NewDatabase creates a fresh, empty database and returns its DSN.
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect to the test PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.DSN(name), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Main is TestMain for a package whose tests need PostgreSQL: it starts
// the server, runs the tests, checks (when they passed and checkLeaks is
// set) that no goroutine outlived them, runs cleanup, stops the server and
// exits. *srv is nil when the binaries are missing outside CI; [Need] then
// skips.
func Main(m *testing.M, srv **Server, checkLeaks bool, cleanup func()) {
	s, err := Start()
	switch {
	case errors.Is(err, ErrMissing) && os.Getenv("CI") != "true":
		fmt.Fprintln(os.Stderr, "pgtest: skipping the PostgreSQL tests:", err)
	case err != nil:
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		os.Exit(1)
	}
	*srv = s
	code := m.Run()
	if code == 0 && checkLeaks {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	if cleanup != nil {
		cleanup()
	}
	if s != nil {
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	os.Exit(code)
}

// Need returns a DSN for a fresh database on srv, or skips the test when
// srv is nil (PostgreSQL missing outside CI).
func Need(t testing.TB, srv *Server) string {
	t.Helper()
	if srv == nil {
		t.Skip(ErrMissing.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
