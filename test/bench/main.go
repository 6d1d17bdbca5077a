// Command bench is the end-to-end benchmark of issue #12: the server as
// users run it, a built binary spawned by a go-sdk client over real pipes
// or reached over loopback HTTP, measured side by side in one run with a
// go-sdk binary whose only tool returns a constant (test/bench/consttool)
// and, where Node and test/e2e's node_modules are present, the official
// TypeScript SDK's constant tool (test/e2e/bench-const-server.mjs).
//
//	go run ./test/bench              # what `make bench` runs
//	go run ./test/bench -duration 6s # longer runs, steadier figures
//
// It prints one line per configuration (transport, clients, server):
// calls/s and p50/p90/p99 latency, with the ratio of time per call to the
// go-sdk constant tool on the same transport and clients; then the runs at
// scale (1,000 prose runs in flight against a gateway answering after
// 200 ms), a list_prompts page of a 10,000-prompt catalog, and boot and
// reload of that catalog, each through the process boundary. Servers of
// one configuration are measured in interleaved rounds, so machine load
// falls on all of them alike: compare ratios, not absolute figures.
//
// Every process it starts is its child and is stopped before it exits;
// the temporary directory holding the binaries and catalogs is removed.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const token = "bench-token"

type options struct {
	duration time.Duration // per configuration and server, over all rounds
	rounds   int
	scale    bool
	// scaleRounds is how many times the scale load runs against each
	// server (alternating with the baseline's).
	scaleRounds int
	catalog     bool // the 10,000-prompt catalog measurements (with scale)
	catalogOnly bool // only the catalog measurements
	// scaleEnv is environment settings (comma-separated NAME=value) for
	// our server under the scale load only, not the baseline's: a
	// collector or runtime setting tried side by side with the default.
	scaleEnv string
	only     string // comma-separated transports
	profile  string // directory for CPU profiles of the servers, "" for none
	baseline string // a git revision whose server is measured beside ours, "" for none
	node     string // "" when the TypeScript floor is not available
	// stdioVersions are the protocol versions the stdio sessions ask for,
	// one block of lines each; stdioVersion is the one being measured.
	stdioVersions string
	stdioVersion  string
	repo          string
	dir           string
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 2*time.Second, "measured time per configuration and server (split over the rounds)")
	flag.IntVar(&o.rounds, "rounds", 4, "interleaved rounds per configuration")
	flag.StringVar(&o.only, "transports", "stdio,http,http-stateless", `the transports to compare, comma-separated ("" for none)`)
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of each Go server process into this directory (builds ours with -tags benchprofile)")
	flag.StringVar(&o.baseline, "baseline", "", "also measure run_prompt of the server built at this git revision (before/after in one run)")
	flag.IntVar(&o.scaleRounds, "scale-rounds", 1, "rounds of the prose-at-scale measurements per server (alternating with the baseline's)")
	flag.StringVar(&o.scaleEnv, "scale-env", "", `environment for our server under the scale load only, e.g. "GOGC=50" or "GODEBUG=adaptivestackstart=1" (comma-separated), the baseline keeping the defaults`)
	flag.BoolVar(&o.catalog, "catalog", true, "with -scale, also measure the 10,000-prompt catalog")
	flag.BoolVar(&o.catalogOnly, "catalog-only", false, "measure only the 10,000-prompt catalog (its list_prompts page over each of -transports, beside -baseline's)")
	flag.BoolVar(&o.scale, "scale", true, "also run the scale measurements (prose runs in flight, the 10,000-prompt catalog)")
	// Hosts that start stdio servers (Claude Code, Cursor, VS Code: the
	// TypeScript SDK's client) speak 2025-11-25 at the newest, and the
	// TypeScript floor serves nothing newer; a go-sdk client left to
	// itself asks for 2026-07-28 (server/discover, and the protocol
	// triple in every request's _meta). Both are measured by default.
	flag.StringVar(&o.stdioVersions, "stdio-protocol", "2025-11-25,2026-07-28", "the protocol versions stdio sessions ask for, comma-separated: one block of stdio lines per version (2026-07-28 is the SEP-2575 path)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	o.repo = repo
	if o.dir, err = os.MkdirTemp("", "promptforge-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(o.dir)
	fmt.Printf("building the binaries into %s ...\n", o.dir)
	// benchprofile adds the hooks the scale measurements read (a debug
	// port) and -profile writes; without their variables they do nothing.
	tags := "benchprofile"
	if o.profile != "" {
		if o.profile, err = filepath.Abs(o.profile); err != nil {
			return err
		}
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	for _, b := range [][2]string{
		{"promptforge-mcp-server", "./cmd/promptforge-mcp-server"},
		{"consttool", "./test/bench/consttool"},
		{"gatewaytest", "./internal/gatewaytest/cmd/gatewaytest"},
	} {
		cmd := exec.CommandContext(ctx, goTool(), "build", "-tags", tags, "-o", filepath.Join(o.dir, b[0]), b[1])
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	if o.baseline != "" {
		if err := buildBaseline(ctx, o); err != nil {
			return fmt.Errorf("build the baseline %s: %w", o.baseline, err)
		}
	}
	o.node = nodeFloor(repo)
	if o.node == "" {
		fmt.Println("the TypeScript SDK floor is skipped: it needs node and test/e2e/node_modules (cd test/e2e && npm ci)")
	}
	versions := strings.FieldsFunc(o.stdioVersions, func(r rune) bool { return r == ',' })
	if len(versions) == 0 {
		return fmt.Errorf("-stdio-protocol: no protocol version given; name at least one, e.g. 2025-11-25")
	}
	fmt.Printf("machine: %d CPUs; %s per server and configuration in %d interleaved rounds; stdio sessions ask for protocol %s\n\n", cpus(), o.duration, o.rounds, strings.Join(versions, ", "))

	if o.catalogOnly {
		if err := bigCatalog(ctx, o); err != nil {
			return fmt.Errorf("the 10,000-prompt catalog: %w", err)
		}
		return nil
	}
	prompts := filepath.Join(o.dir, "prompts")
	if err := writePrompts(prompts, map[string]string{"echo.md": echoPrompt}); err != nil {
		return err
	}
	if o.only != "" {
		fmt.Printf("%-17s %-8s %-27s %9s %9s %9s %9s %9s   %s\n", "transport", "clients", "server", "calls/s", "p50", "p90", "p99", "cpu/call", "vs go-sdk const: time per call (p50, server cpu per call)")
	}
	for _, tr := range strings.FieldsFunc(o.only, func(r rune) bool { return r == ',' }) {
		if !slices.Contains([]string{"stdio", "http", "http-stateless"}, tr) {
			return fmt.Errorf("-transports: %q is not stdio, http or http-stateless", tr)
		}
		eras := []string{""}
		if tr == "stdio" {
			eras = versions
		}
		for _, version := range eras {
			o := o
			o.stdioVersion = version
			for _, clients := range []int{1, 16} {
				if err := compare(ctx, o, tr, clients, prompts); err != nil {
					return fmt.Errorf("%s %s, %d clients: %w", tr, version, clients, err)
				}
			}
		}
	}
	if trs := strings.Split(o.only, ","); slices.Contains(trs, "http") && slices.Contains(trs, "http-stateless") {
		for _, clients := range []int{1, 16} {
			if err := replayEras(ctx, o, prompts, clients); err != nil {
				return fmt.Errorf("the two HTTP eras replayed, %d clients: %w", clients, err)
			}
		}
	}
	if !o.scale {
		return nil
	}
	fmt.Println()
	if err := proseAtScale(ctx, o); err != nil {
		return fmt.Errorf("prose runs at scale: %w", err)
	}
	if !o.catalog {
		return nil
	}
	if err := bigCatalog(ctx, o); err != nil {
		return fmt.Errorf("the 10,000-prompt catalog: %w", err)
	}
	return nil
}

// A target is one server under test on one transport: it hands out client
// sessions and the call each makes.
type target struct {
	name    string
	floor   bool
	call    func() *mcp.CallToolParams
	connect func(ctx context.Context) (*mcp.ClientSession, error)
	// callers, when set, are the target's callers instead of sessions
	// of connect calling call (replay.go).
	callers func(c int) caller
	stop    func()
	pids    func() []int
}

type sample struct {
	calls int
	took  time.Duration
	lat   []time.Duration
	cpu   time.Duration // the server processes' CPU time (user + system)
}

func (s *sample) cpuPerCall() time.Duration { return s.cpu / time.Duration(max(s.calls, 1)) }

func (s *sample) rate() float64 { return float64(s.calls) / s.took.Seconds() }

func (s *sample) pct(p float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	slices.Sort(s.lat)
	return s.lat[min(len(s.lat)-1, int(float64(len(s.lat))*p))]
}

// compare measures every target of one transport at one client count, in
// interleaved rounds, and prints a line for each.
func compare(ctx context.Context, o options, tr string, clients int, prompts string) error {
	targets, err := targetsFor(ctx, o, tr, clients, prompts)
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	if err != nil {
		return err
	}
	results, err := measure(ctx, o, targets, tr, clients)
	if err != nil {
		return err
	}
	var floor *sample
	for i, t := range targets {
		if t.floor {
			floor = &results[i]
		}
	}
	for i, t := range targets {
		s := &results[i]
		ratio := ""
		if floor != nil {
			ratio = fmt.Sprintf("%.2fx (p50 %.2fx, cpu %.2fx)", floor.rate()/s.rate(), float64(s.pct(0.5))/float64(floor.pct(0.5)), float64(s.cpuPerCall())/float64(floor.cpuPerCall()))
		}
		label := tr
		if tr == "stdio" {
			label += " " + o.stdioVersion
		}
		fmt.Printf("%-17s %-8d %-27s %9.0f %9s %9s %9s %9s   %s\n", label, clients, t.name, s.rate(), us(s.pct(0.5)), us(s.pct(0.9)), us(s.pct(0.99)), us(s.cpuPerCall()), ratio)
	}
	return nil
}

// measure opens the sessions of every target, warms each up, then runs
// o.rounds interleaved rounds of clients callers (the order rotating, so
// machine load falls on all alike) and returns each target's sample.
func measure(ctx context.Context, o options, targets []target, tr string, clients int) ([]sample, error) {
	callers := make([]func(c int) caller, len(targets))
	for i, t := range targets {
		if t.callers != nil {
			callers[i] = t.callers
		} else {
			sessions, err := sessionsFor(ctx, t, tr, clients)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			defer func() {
				for _, cs := range sessions {
					cs.Close()
				}
			}()
			callers[i] = sessionCallers(sessions, t.call)
		}
		// Warm up: connection pools, lazily built state, the JIT of Node.
		if _, err := driveCallers(ctx, clients, callers[i], 300*time.Millisecond); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	results := make([]sample, len(targets))
	for r := range o.rounds {
		for k := range targets {
			i := (k + r) % len(targets)
			cpu0 := cpuTime(targets[i].pids())
			s, err := driveCallers(ctx, clients, callers[i], o.duration/time.Duration(o.rounds))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", targets[i].name, err)
			}
			results[i].cpu += cpuTime(targets[i].pids()) - cpu0
			results[i].calls += s.calls
			results[i].took += s.took
			results[i].lat = append(results[i].lat, s.lat...)
		}
	}
	return results, nil
}

// sessionsFor opens the client sessions of one configuration: over stdio
// one session (a stdio server has one client) shared by the callers; over
// HTTP one session per caller.
func sessionsFor(ctx context.Context, t target, tr string, clients int) ([]*mcp.ClientSession, error) {
	n := clients
	if tr == "stdio" {
		n = 1
	}
	var out []*mcp.ClientSession
	for range n {
		cs, err := t.connect(ctx)
		if err != nil {
			for _, c := range out {
				c.Close()
			}
			return nil, err
		}
		out = append(out, cs)
	}
	return out, nil
}

// A caller makes one call and says whether it failed; each of a
// configuration's concurrent callers has its own.
type caller func(context.Context) error

// sessionCallers are the callers of go-sdk client sessions: caller c
// calls on sessions[c % len], with the params call makes.
func sessionCallers(sessions []*mcp.ClientSession, call func() *mcp.CallToolParams) func(c int) caller {
	return func(c int) caller {
		cs := sessions[c%len(sessions)]
		params := call()
		return func(ctx context.Context) error {
			res, err := cs.CallTool(ctx, params)
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %v", res.Content)
			}
			return err
		}
	}
}

// drive keeps clients callers busy for d, each on sessions[i % len], and
// returns what they did.
func drive(ctx context.Context, sessions []*mcp.ClientSession, clients int, call func() *mcp.CallToolParams, d time.Duration) (sample, error) {
	return driveCallers(ctx, clients, sessionCallers(sessions, call), d)
}

// driveCallers keeps clients callers (newCaller(0) to newCaller(clients-1))
// busy for d, and returns what they did.
func driveCallers(ctx context.Context, clients int, newCaller func(c int) caller, d time.Duration) (sample, error) {
	lats := make([][]time.Duration, clients)
	errs := make([]error, clients)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			call := newCaller(c)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := call(ctx); err != nil {
					errs[c] = err
					return
				}
				lats[c] = append(lats[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	s := sample{took: time.Since(start)}
	for _, l := range lats {
		s.calls += len(l)
		s.lat = append(s.lat, l...)
	}
	return s, errors.Join(append(errs, ctx.Err())...)
}

func echoCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "run_prompt", Arguments: map[string]any{"prompt": "echo", "args": "hello"}}
}

func listCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "list_prompts", Arguments: map[string]any{}}
}

func constCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "const", Arguments: map[string]any{}}
}

// targetsFor starts the servers of one transport: ours (run_prompt on a
// Lua-only prompt, and list_prompts), the go-sdk floor and, on stdio and
// stateful HTTP, the TypeScript floor.
func targetsFor(ctx context.Context, o options, tr string, clients int, prompts string) ([]target, error) {
	pf := filepath.Join(o.dir, "promptforge-mcp-server")
	floor := filepath.Join(o.dir, "consttool")
	var out []target
	// env profiles a Go server when asked to; the go-sdk floor reads the
	// same variables. The profile covers the warm-up and the first
	// -duration of the configuration's rounds: a profile is written only
	// if its time is up before the process exits, and the rounds of all
	// the servers of a configuration take about -duration times their
	// number, so a longer profile (it was 2 × -duration + 5 s) could
	// outlast the process and leave an empty file.
	env := func(name string) []string {
		return profileEnv(o, fmt.Sprintf("%s-%d-%s", tr, clients, name), o.duration+time.Second)
	}
	add := func(name string, isFloor bool, call func() *mcp.CallToolParams, start starter) error {
		connect, stop, pids, err := start()
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		out = append(out, target{name: name, floor: isFloor, call: call, connect: connect, stop: stop, pids: pids})
		return nil
	}
	switch tr {
	case "stdio":
		cfg, err := writeConfig(o.dir, "stdio", prompts, "", 0, "")
		if err != nil {
			return nil, err
		}
		cfgOff, err := tracesOff(o.dir, "stdio", prompts, "")
		if err != nil {
			return nil, err
		}
		for _, t := range []struct {
			name  string
			floor bool
			call  func() *mcp.CallToolParams
			argv  []string
		}{
			{"go-sdk const (floor)", true, constCall, []string{floor}},
			{"promptforge run_prompt", false, echoCall, []string{pf, "serve", "--stdio", cfg}},
			{"promptforge run_prompt, traces off", false, echoCall, []string{pf, "serve", "--stdio", cfgOff}},
			{"baseline run_prompt", false, echoCall, baseArgv(o, "serve", "--stdio", cfg)},
			{"promptforge list_prompts", false, listCall, []string{pf, "serve", "--stdio", cfg}},
			{"ts-sdk const", false, constCall, tsArgv(o, "")},
		} {
			if t.name == "ts-sdk const" && o.stdioVersion >= "2026-07-28" {
				// The TypeScript SDK serves 2025-11-25 at the newest.
				continue
			}
			if len(t.argv) == 0 || t.argv[0] == "" {
				continue
			}
			var e []string
			if t.argv[0] == pf || t.floor {
				e = env(t.name)
			}
			if err := add(t.name, t.floor, t.call, stdioStarter(t.argv, e, o.stdioVersion)); err != nil {
				return out, err
			}
		}
	case "http", "http-stateless":
		version := "2025-11-25"
		if tr == "http-stateless" {
			version = "2026-07-28"
		}
		floorArgs := []string{"-http"}
		if tr == "http-stateless" {
			floorArgs = []string{"-stateless", "-http"}
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		if err := add("go-sdk const (floor)", true, constCall, httpStarter(append(append([]string{floor}, floorArgs...), "127.0.0.1:"+port), port, version, env("go-sdk const"))); err != nil {
			return out, err
		}
		for _, t := range []struct {
			name string
			call func() *mcp.CallToolParams
			bin  string
		}{{"promptforge run_prompt", echoCall, pf}, {"promptforge run_prompt, traces off", echoCall, pf}, {"promptforge list_prompts", listCall, pf}, {"baseline run_prompt", echoCall, baseArgv(o)[0]}} {
			if t.bin == "" {
				continue
			}
			port, err := freePort()
			if err != nil {
				return out, err
			}
			cfg, err := writeConfig(o.dir, "http-"+port, prompts, port, 0, "")
			if strings.HasSuffix(t.name, "traces off") {
				cfg, err = tracesOff(o.dir, "http-"+port, prompts, port)
			}
			if err != nil {
				return out, err
			}
			if err := add(t.name, false, t.call, httpStarter([]string{t.bin, "serve", cfg}, port, version, env(t.name))); err != nil {
				return out, err
			}
		}
		if tr == "http" && o.node != "" {
			port, err := freePort()
			if err != nil {
				return out, err
			}
			if err := add("ts-sdk const", false, constCall, httpStarter(tsArgv(o, port), port, version, nil)); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// profileEnv is the environment of a Go server that writes a CPU profile
// of its first d to name.pprof in the -profile directory; nil without one.
func profileEnv(o options, name string, d time.Duration) []string {
	if o.profile == "" {
		return nil
	}
	file := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(name + ".pprof")
	return append(os.Environ(), "PROMPTFORGE_CPUPROFILE="+filepath.Join(o.profile, file), "PROMPTFORGE_PROFILE_FOR="+d.String())
}

// A starter starts one server and returns how to connect a session to it,
// how to stop it, and the pids of its processes so far.
type starter func() (connect func(context.Context) (*mcp.ClientSession, error), stop func(), pids func() []int, err error)

// stdioStarter spawns argv for each session, as an MCP host does, and
// connects a session of protocol version to it.
func stdioStarter(argv, env []string, version string) starter {
	return func() (func(context.Context) (*mcp.ClientSession, error), func(), func() []int, error) {
		var mu sync.Mutex
		var pids []int
		connect := func(ctx context.Context) (*mcp.ClientSession, error) {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = env
			cs, err := newClient().Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err == nil && cs.InitializeResult().ProtocolVersion != version {
				// A line must measure the version it names.
				got := cs.InitializeResult().ProtocolVersion
				cs.Close()
				return nil, fmt.Errorf("%s negotiated protocol %s, not the %s asked for", argv[0], got, version)
			}
			if err == nil {
				mu.Lock()
				pids = append(pids, cmd.Process.Pid)
				mu.Unlock()
			}
			return cs, err
		}
		return connect, func() {}, func() []int { mu.Lock(); defer mu.Unlock(); return slices.Clone(pids) }, nil
	}
}

// httpStarter starts argv, serving on port, and connects sessions of
// protocol version to it.
func httpStarter(argv []string, port, version string, env []string) starter {
	return func() (func(context.Context) (*mcp.ClientSession, error), func(), func() []int, error) {
		connect, stop, pid, err := startHTTP(argv, port, version, env)
		return connect, stop, func() []int { return []int{pid} }, err
	}
}

// startHTTP starts argv, serving on port, and returns how to connect
// sessions of protocol version to it, how to stop it, and its pid.
func startHTTP(argv []string, port, version string, env []string) (func(context.Context) (*mcp.ClientSession, error), func(), int, error) {
	return startHTTPClients(argv, port, version, env, 256, nil)
}

// startHTTPClients is startHTTP whose sessions keep up to idle
// connections open between calls, as that many separate clients would;
// stderr, if not nil, receives the server's log (the scale census).
func startHTTPClients(argv []string, port, version string, env []string, idle int, stderr io.Writer) (func(context.Context) (*mcp.ClientSession, error), func(), int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stderr = stderr
	// Without stderr the server's log goes nowhere, as an MCP host keeps
	// it away from the terminal; the benchmark checks every call's reply
	// instead.
	if err := cmd.Start(); err != nil {
		return nil, nil, 0, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	if err := waitListening("127.0.0.1:" + port); err != nil {
		stop()
		return nil, nil, 0, err
	}
	tr := &http.Transport{MaxIdleConns: idle, MaxIdleConnsPerHost: idle}
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		return connectHTTP(ctx, port, version, bearer{tr})
	}
	return connect, func() { tr.CloseIdleConnections(); stop() }, cmd.Process.Pid, nil
}

// connectHTTP connects a go-sdk client session of protocol version to the
// server on port, its requests sent through rt.
func connectHTTP(ctx context.Context, port, version string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	cs, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             "http://127.0.0.1:" + port + "/mcp",
		HTTPClient:           &http.Client{Transport: rt},
		DisableStandaloneSSE: true,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	// A stateless run must really be stateless; over stateful HTTP the
	// TypeScript SDK may settle on an older version, which is fine.
	if got := cs.InitializeResult().ProtocolVersion; version == "2026-07-28" && got != version {
		cs.Close()
		return nil, fmt.Errorf("asked for protocol %s, got %s", version, got)
	}
	return cs, nil
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
}

type bearer struct{ base http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return b.base.RoundTrip(r)
}

func tsArgv(o options, port string) []string {
	if o.node == "" {
		return nil
	}
	argv := []string{o.node, filepath.Join(o.repo, "test", "e2e", "bench-const-server.mjs")}
	if port != "" {
		argv = append(argv, "--http", port)
	}
	return argv
}

// buildBaseline builds the server as it was at revision o.baseline (git
// archive into the temporary directory), as promptforge-baseline.
func buildBaseline(ctx context.Context, o options) error {
	src := filepath.Join(o.dir, "baseline-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", o.repo, o.baseline, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive: %v\n%s", err, out)
	}
	// The scale measurements read the debug port of debug_bench.go; a
	// revision older than it gets today's copy (a benchprofile-only file).
	hook := filepath.Join("cmd", "promptforge-mcp-server", "debug_bench.go")
	if _, err := os.Stat(filepath.Join(src, hook)); err != nil {
		b, err := os.ReadFile(filepath.Join(o.repo, hook))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(src, hook), b, 0o644); err != nil {
			return err
		}
	}
	build := exec.CommandContext(ctx, goTool(), "build", "-tags", "benchprofile", "-o", filepath.Join(o.dir, "promptforge-baseline"), "./cmd/promptforge-mcp-server")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

// baseArgv is the baseline server's command line, or [""] without one.
func baseArgv(o options, args ...string) []string {
	if o.baseline == "" {
		return []string{""}
	}
	return append([]string{filepath.Join(o.dir, "promptforge-baseline")}, args...)
}

// nodeFloor returns the node command when the TypeScript floor can run.
func nodeFloor(repo string) string {
	node, err := exec.LookPath("node")
	if err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(repo, "test", "e2e", "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		return ""
	}
	return node
}

const echoPrompt = "---\nname: echo\ndescription: Return the arguments unchanged, without calling a model.\npromptforge: 1\n---\n\n# Echo\n\n## Return\n\n```lua\nreturn args\n```\n"

// speakPrompt makes one model turn; the scripted gateway holds it for the
// seconds its text names.
const speakPrompt = "---\nname: speak\ndescription: Say one thing through the model.\npromptforge: 1\n---\n\n# Speak\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nTake 0.2 seconds.\n"

// holdPrompt is speakPrompt held for 5 s (holdWait), for the memory phase.
const holdPrompt = "---\nname: hold\ndescription: Say one thing through a slow model.\npromptforge: 1\n---\n\n# Hold\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nTake 5 seconds.\n"

func writePrompts(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeConfig writes a prompts.toml for one server (name keeps files
// apart) and returns its path. port "" is stdio. gateway "" points at a
// port where nothing listens (boot goes on without models).
// tracesOff writes the configuration writeConfig writes with run traces
// off ([observability] traces = false; on is the default): the two, side
// by side, measure what traces cost a run as users run it (issue #15).
func tracesOff(dir, name, prompts, port string) (string, error) {
	path, err := writeConfig(dir, name+"-traces-off", prompts, port, 0, "")
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString("\n[observability]\ntraces = false\n"); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

func writeConfig(dir, name, prompts, port string, runs int, gateway string, extra ...string) (string, error) {
	if port == "" {
		port = "1"
	}
	if runs == 0 {
		runs = 64
	}
	url, key := "http://127.0.0.1:1/v1", "gw-key"
	if gateway != "" {
		url, key, _ = strings.Cut(gateway, " ")
	}
	toml := fmt.Sprintf("[server]\nbind = \"127.0.0.1:%s\"\napi_key = %q\nmax_concurrent_runs = %d\nadmission_timeout = \"60s\"\nreply_deadline = \"60s\"\nretain_completed = \"1s\"\n%s\n\n[paths]\nprompts = %q\nfiles = [%q]\n\n[gateway]\nurl = %q\napi_key = %q\ntimeout = \"2s\"\nrefresh = \"0\"\n\n[catalog]\ninclude = [\"**/*.md\"]\n",
		port, token, runs, strings.Join(append([]string{"watch = false"}, extra...), "\n"), prompts, dir, url, key)
	if slices.ContainsFunc(extra, func(s string) bool { return strings.HasPrefix(s, "watch") }) {
		toml = strings.Replace(toml, "watch = false\n", "", 1)
	}
	path := filepath.Join(dir, "prompts-"+name+".toml")
	return path, os.WriteFile(path, []byte(toml), 0o644)
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
}

// waitListening polls until addr accepts a connection (at most 30 s).
func waitListening(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after 30 s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func us(d time.Duration) string {
	if d >= 10*time.Millisecond {
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%dµs", d.Microseconds())
}

func repoRoot() (string, error) {
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run it inside the repository (go run ./test/bench)")
	}
	return filepath.Dir(mod), nil
}

func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

func cpus() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

// cpuTime is the CPU time (user + system) the processes pids have used
// so far (Linux; 0 elsewhere), read from /proc/PID/stat in clock ticks
// (USER_HZ, 100 on Linux).
func cpuTime(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses and
		// may hold spaces: state is field 3, utime 14, stime 15.
		_, rest, ok := strings.Cut(string(b), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// rssBytes is the resident set of process pid (Linux), 0 elsewhere.
func rssBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// startGateway starts the scripted gateway answering every chat request
// after the seconds its text names; it returns "url key", its stop and
// its pid.
func startGateway(ctx context.Context, o options) (string, func(), int, error) {
	script := filepath.Join(o.dir, "gateway-script.json")
	if err := os.WriteFile(script, []byte(`{"respond":{"sleep":true,"then":{"text":"done"}}}`), 0o644); err != nil {
		return "", nil, 0, err
	}
	cmd := exec.Command(filepath.Join(o.dir, "gatewaytest"), "-script", script, "-stdin-lifeline")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, 0, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, 0, err
	}
	stop := func() {
		stdin.Close()
		cmd.Wait()
	}
	var ready struct {
		URL    string `json:"url"`
		APIKey string `json:"api_key"`
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err == nil {
		err = json.Unmarshal([]byte(line), &ready)
	}
	if err != nil {
		stop()
		return "", nil, 0, fmt.Errorf("the gateway's ready line %q: %w", line, err)
	}
	go io.Copy(io.Discard, stdout)
	return ready.URL + " " + ready.APIKey, stop, cmd.Process.Pid, nil
}
