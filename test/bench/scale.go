package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The scale figures of issue #12.
const (
	inFlight    = 1000
	gatewayWait = 200 * time.Millisecond
	// offered is the open-loop driver's arrival rate, the target.
	offered = 1500
	// holdWait is how long the gateway holds each run of the memory
	// phase: long enough that all 1,000 are in flight at once before the
	// first one ends.
	holdWait    = 5 * time.Second
	sessions    = 50
	catalogSize = 10000
)

// A scaleServer is one server process under the scale load, with its
// sessions and its idle footprint.
type scaleServer struct {
	name        string
	pid         int
	port, debug string // the MCP and /metrics port; the benchprofile debug port
	css         []*mcp.ClientSession
	stop        func()
	idle        footprint
	// stderr is the server's log, kept for the stack census (with
	// -profile), nil otherwise.
	stderr *serverLog
}

// footprint is a server's memory after a full collection with every free
// page returned to the OS (the debug port's /debug/free): what the load
// needs, without the collector's headroom or pages not yet returned.
type footprint struct {
	rss, heap, stack, goroutines float64 // bytes; heap is the live heap
	// inuse is the heap's spans in use (heap_inuse): the live heap plus
	// the free slots of partly used spans, which a collection cannot
	// give back to the OS (fragmentation).
	inuse float64
}

func (a footprint) perRun(idle footprint, n int) footprint {
	d := float64(n)
	return footprint{(a.rss - idle.rss) / d, (a.heap - idle.heap) / d, (a.stack - idle.stack) / d, (a.goroutines - idle.goroutines) / d, (a.inuse - idle.inuse) / d}
}

// scaleRound is what one server did in one round.
type scaleRound struct {
	closed, open sample
	// ownOpen is the open loop's runs as the server timed them, from
	// registration to the terminal record (its log's elapsed_ms, whole
	// milliseconds): the server's own share of the added latency, without
	// the client's and the HTTP and SDK layers' (see proseAtScale).
	ownOpen            sample
	closedCPU, openCPU [3]float64 // µs per run: server, gateway, this client
	closedRSS          int64      // median RSS under the closed loop
	// allocs, allocBytes and gcs are the server's allocations, bytes
	// allocated and collections per run under the closed loop, from
	// /metrics: figures machine load does not move.
	allocs, allocBytes, gcs float64
	// opens is TCP connections opened per run under the closed loop, on
	// the whole machine (/proc/net/snmp ActiveOpens): the server's dials
	// to the gateway, the client's to the server, and whatever else runs.
	opens    float64
	late     int       // open-loop calls that waited for one of the 1,000 places
	inFlight footprint // per run in flight, less idle
	retained footprint // per finished run, less the same after eviction
	expired  footprint // after the retention window, less idle (whole process)
}

// proseAtScale measures prose runs at scale over streamable HTTP against
// the scripted gateway, which answers each run's one model turn after
// 200 ms, three ways (docs/benchmarks.md, "At scale"):
//
//   - closed loop: 1,000 callers each start a run as soon as the last
//     one ended, so 1,000 are always in flight; runs/s and the latency
//     added over the gateway's 200 ms. This saturates the CPU by
//     construction (Little's law: 1,000 in flight at 200 ms would be
//     5,000 runs/s), so its added latency is CPU queueing, not the
//     server's own.
//   - open loop: runs arrive at 1,500/s on a fixed schedule, at most
//     1,000 in flight (an arrival waits for a place, and its latency
//     counts from its scheduled time); runs/s achieved and the added
//     latency, which is the target.
//   - memory: 1,000 runs held by the gateway at once; the process's
//     resident set, live heap, stacks and goroutines after a full
//     collection, less the idle process's, per run; then the same once
//     they have ended while their records and traces are retained, and
//     once the retention window has passed.
//
// With -baseline the server built at that revision is measured too, in
// alternating rounds (baseline, ours, baseline, ours), so machine load
// falls on both alike.
func proseAtScale(ctx context.Context, o options) error {
	gw, stopGateway, gwPid, err := startGateway(ctx, o)
	if err != nil {
		return err
	}
	defer stopGateway()
	prompts := filepath.Join(o.dir, "prompts-speak")
	if err := writePrompts(prompts, map[string]string{"speak.md": speakPrompt, "hold.md": holdPrompt}); err != nil {
		return err
	}
	ours := "promptforge"
	if o.scaleEnv != "" {
		ours += " (" + o.scaleEnv + ")"
	}
	bins := [][2]string{{ours, filepath.Join(o.dir, "promptforge-mcp-server")}}
	if o.baseline != "" {
		bins = append([][2]string{{"baseline " + o.baseline, filepath.Join(o.dir, "promptforge-baseline")}}, bins...)
	}
	var servers []*scaleServer
	defer func() {
		for _, s := range servers {
			for _, cs := range s.css {
				cs.Close()
			}
			s.stop()
		}
	}()
	for _, b := range bins {
		s, err := startScaleServer(ctx, o, b[0], b[1], gw)
		if err != nil {
			return fmt.Errorf("%s: %w", b[0], err)
		}
		servers = append(servers, s)
	}
	rounds := make([][]scaleRound, len(servers))
	for r := range o.scaleRounds {
		for i, s := range servers {
			res, err := scaleOnce(ctx, o, s, gwPid)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", s.name, r+1, err)
			}
			rounds[i] = append(rounds[i], res)
		}
	}
	fmt.Printf("prose runs at scale over HTTP (%d sessions), the scripted gateway answering each run's model turn after %s; %d round(s), servers alternating; machine load average now %s\n",
		sessions, gatewayWait, o.scaleRounds, loadAverage())
	for i, s := range servers {
		fmt.Printf("%s (idle: RSS %.1f MB, live heap %.1f MB, %.0f goroutines)\n", s.name, s.idle.rss/(1<<20), s.idle.heap/(1<<20), s.idle.goroutines)
		for r, x := range rounds[i] {
			fmt.Printf("  round %d  closed loop, %d in flight: %5.0f runs/s, added over the gateway's p50 %s p99 %s; CPU per run: server %.0fµs, gateway %.0fµs, client %.0fµs; RSS under it %.1f MB\n",
				r+1, inFlight, x.closed.rate(), us(x.closed.pct(0.5)-gatewayWait), us(x.closed.pct(0.99)-gatewayWait), x.closedCPU[0], x.closedCPU[1], x.closedCPU[2], mb(x.closedRSS))
			fmt.Printf("           server allocations per run under it: %.0f (%.1f KB), %.4f collections; TCP connections opened per run (whole machine) %.2f\n", x.allocs, x.allocBytes/1024, x.gcs, x.opens)
			fmt.Printf("           RSS under it less idle, per run in flight (the collector's headroom and garbage included, as the process runs): %.1f KB\n",
				(float64(x.closedRSS)-s.idle.rss)/inFlight/1024)
			fmt.Printf("           open loop, %d runs/s offered: %5.0f runs/s, added p50 %s p99 %s (%d of %d waited for a place); CPU per run: server %.0fµs, gateway %.0fµs, client %.0fµs\n",
				offered, x.open.rate(), us(x.open.pct(0.5)-gatewayWait), us(x.open.pct(0.99)-gatewayWait), x.late, x.open.calls, x.openCPU[0], x.openCPU[1], x.openCPU[2])
			fmt.Printf("           the same runs as the server timed them (registration to terminal record, its log, %d runs, whole ms): added p50 %s p99 %s\n",
				x.ownOpen.calls, us(x.ownOpen.pct(0.5)-gatewayWait), us(x.ownOpen.pct(0.99)-gatewayWait))
			fmt.Printf("           memory per in-flight run (%d held, after a full GC, less idle): RSS %.1f KB, live heap %.1f KB (heap spans in use %.1f KB), stacks %.1f KB, %.2f goroutines\n",
				inFlight, x.inFlight.rss/1024, x.inFlight.heap/1024, x.inFlight.inuse/1024, x.inFlight.stack/1024, x.inFlight.goroutines)
			fmt.Printf("           retained per finished run (its record and trace, until retain_completed evicts them): live heap %.1f KB; after the window: live heap %+.1f MB, RSS %+.1f MB, %+.0f goroutines over idle (the idle connections kept for the next runs)\n",
				x.retained.heap/1024, x.expired.heap/(1<<20), x.expired.rss/(1<<20), x.expired.goroutines)
		}
	}
	if len(servers) == 2 {
		b, n := rounds[0], rounds[1]
		ratio := func(f func(scaleRound) float64) string {
			var sb, sn float64
			for r := range b {
				sb, sn = sb+f(b[r]), sn+f(n[r])
			}
			return fmt.Sprintf("%.2fx", sn/sb)
		}
		fmt.Printf("ours / baseline, over the rounds: closed-loop runs/s %s, added p99 %s, server CPU per run %s, gateway CPU per run %s, allocations per run %s (bytes %s), TCP connections opened per run %s, RSS under it %s; open-loop added p50 %s, p99 %s, as the server timed them p50 %s, p99 %s; memory per in-flight run: RSS %s, live heap %s, heap spans in use %s, stacks %s\n",
			ratio(func(x scaleRound) float64 { return x.closed.rate() }),
			ratio(func(x scaleRound) float64 { return float64(x.closed.pct(0.99) - gatewayWait) }),
			ratio(func(x scaleRound) float64 { return x.closedCPU[0] }),
			ratio(func(x scaleRound) float64 { return x.closedCPU[1] }),
			ratio(func(x scaleRound) float64 { return x.allocs }),
			ratio(func(x scaleRound) float64 { return x.allocBytes }),
			ratio(func(x scaleRound) float64 { return x.opens }),
			ratio(func(x scaleRound) float64 { return float64(x.closedRSS) }),
			ratio(func(x scaleRound) float64 { return float64(x.open.pct(0.5) - gatewayWait) }),
			ratio(func(x scaleRound) float64 { return float64(x.open.pct(0.99) - gatewayWait) }),
			ratio(func(x scaleRound) float64 { return float64(x.ownOpen.pct(0.5) - gatewayWait) }),
			ratio(func(x scaleRound) float64 { return float64(x.ownOpen.pct(0.99) - gatewayWait) }),
			ratio(func(x scaleRound) float64 { return x.inFlight.rss }),
			ratio(func(x scaleRound) float64 { return x.inFlight.heap }),
			ratio(func(x scaleRound) float64 { return x.inFlight.inuse }),
			ratio(func(x scaleRound) float64 { return x.inFlight.stack }))
	}
	for _, s := range servers {
		if err := s.census(ctx, o); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	fmt.Println()
	return nil
}

// startScaleServer starts bin with room for the 1,000 runs, its debug
// port open, connects the sessions, warms it up and reads its idle
// footprint.
func startScaleServer(ctx context.Context, o options, name, bin, gw string) (*scaleServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	debugPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg, err := writeConfig(o.dir, "scale-"+port, filepath.Join(o.dir, "prompts-speak"), port, inFlight+100, gw)
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "PROMPTFORGE_DEBUG_ADDR=127.0.0.1:"+debugPort)
	if o.profile != "" {
		// Frame pointers in the SIGQUIT dump, for the census.
		env = append(env, "GOTRACEBACK=system")
	}
	if o.scaleEnv != "" && !strings.HasPrefix(name, "baseline") {
		env = append(env, strings.Split(o.scaleEnv, ",")...)
	}
	slog, stderr, err := newServerLog(o, name)
	if err != nil {
		return nil, err
	}
	defer stderr.Close() // the child keeps its own descriptor
	connect, stop, pid, err := startHTTPClients([]string{bin, "serve", cfg}, port, "2025-11-25", env, inFlight, stderr)
	if err != nil {
		return nil, err
	}
	s := &scaleServer{name: name, pid: pid, port: port, debug: debugPort, stop: stop, stderr: slog}
	for range sessions {
		cs, err := connect(ctx)
		if err != nil {
			stop()
			return nil, err
		}
		s.css = append(s.css, cs)
	}
	if _, err := drive(ctx, s.css[:1], 4, speakCall, time.Second); err != nil {
		return s, err
	}
	if s.idle, err = s.footprint(); err != nil {
		return s, err
	}
	return s, nil
}

func speakCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "run_prompt", Arguments: map[string]any{"prompt": "speak"}}
}

func holdCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "run_prompt", Arguments: map[string]any{"prompt": "hold"}}
}

// footprint frees what the server can and reads its memory.
func (s *scaleServer) footprint() (footprint, error) {
	// Three collections: each one also halves the goroutine stacks that
	// use less than a quarter of theirs, so stacks grown deep earlier in a
	// run (its Lua, say) are counted at what they hold now.
	for range 3 {
		resp, err := http.Get("http://127.0.0.1:" + s.debug + "/debug/free")
		if err != nil {
			return footprint{}, fmt.Errorf("the server's debug port (a benchprofile build): %w", err)
		}
		resp.Body.Close()
	}
	m := scrape(s.port)
	if m == nil {
		return footprint{}, errors.New("cannot read the server's /metrics")
	}
	return footprint{float64(rssBytes(s.pid)), m["go_memstats_heap_alloc_bytes"], m["go_memstats_stack_inuse_bytes"], m["go_goroutines"], m["go_memstats_heap_inuse_bytes"]}, nil
}

// scaleOnce runs the three measurements once against s.
func scaleOnce(ctx context.Context, o options, s *scaleServer, gwPid int) (scaleRound, error) {
	var x scaleRound
	pids := []int{s.pid, gwPid, os.Getpid()}
	cpuPerRun := func(cpu0 []time.Duration, runs int) (out [3]float64) {
		for i, p := range pids {
			out[i] = float64((cpuTime([]int{p}) - cpu0[i]).Microseconds()) / float64(max(runs, 1))
		}
		return out
	}
	cpuNow := func() []time.Duration {
		out := make([]time.Duration, len(pids))
		for i, p := range pids {
			out[i] = cpuTime([]int{p})
		}
		return out
	}

	// Closed loop: a first second fills the server up to 1,000 in flight;
	// only the steady state after it is counted.
	if _, err := drive(ctx, s.css, inFlight, speakCall, time.Second); err != nil {
		return x, err
	}
	var samples []int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				samples = append(samples, rssBytes(s.pid))
			}
		}
	})
	stopProfile := s.profile(o, "closed", o.duration)
	m0 := scrape(s.port)
	opens0 := tcpActiveOpens()
	cpu0 := cpuNow()
	var err error
	x.closed, err = drive(ctx, s.css, inFlight, speakCall, o.duration)
	x.closedCPU = cpuPerRun(cpu0, x.closed.calls)
	x.opens = float64(tcpActiveOpens()-opens0) / float64(max(x.closed.calls, 1))
	if m1 := scrape(s.port); m0 != nil && m1 != nil {
		per := func(k string) float64 { return (m1[k] - m0[k]) / float64(max(x.closed.calls, 1)) }
		x.allocs, x.allocBytes, x.gcs = per("go_memstats_mallocs_total"), per("go_memstats_alloc_bytes_total"), per("go_gc_duration_seconds_count")
	}
	close(done)
	wg.Wait()
	stopProfile()
	if err != nil {
		return x, err
	}
	slices.Sort(samples)
	if len(samples) > 0 {
		x.closedRSS = samples[len(samples)/2]
	}

	cpu0 = cpuNow()
	logAt := s.stderr.size()
	x.open, x.late, err = openLoop(ctx, s.css, o.duration)
	x.openCPU = cpuPerRun(cpu0, x.open.calls)
	if err != nil {
		return x, err
	}
	x.ownOpen = s.stderr.elapsed(logAt, "speak")

	err = s.hold(ctx, o, &x)
	return x, err
}

// tcpActiveOpens is the machine's count of TCP connections opened so far
// (Linux /proc/net/snmp, Tcp ActiveOpens), 0 elsewhere.
func tcpActiveOpens() int64 {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0
	}
	var names []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Tcp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "ActiveOpens" && i < len(f) {
				v, _ := strconv.ParseInt(f[i], 10, 64)
				return v
			}
		}
	}
	return 0
}

// openLoop offers offered runs/s for d, at most inFlight at once, and
// returns what they did: the latency of each from its scheduled start,
// the rate over the time from the first scheduled start to the last
// reply, and how many waited for a place.
func openLoop(ctx context.Context, css []*mcp.ClientSession, d time.Duration) (sample, int, error) {
	n := int(d.Seconds() * offered)
	places := make(chan struct{}, inFlight)
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	late := 0
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second / offered)
		time.Sleep(time.Until(at))
		select {
		case places <- struct{}{}:
		default:
			late++
			places <- struct{}{}
		}
		wg.Go(func() {
			defer func() { <-places }()
			res, err := css[i%len(css)].CallTool(ctx, speakCall())
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %v", res.Content)
			}
			lat[i], errs[i] = time.Since(at), err
		})
	}
	wg.Wait()
	return sample{calls: n, took: time.Since(start), lat: lat}, late, errors.Join(errs...)
}

// hold puts 1,000 long runs in flight at once and reads the footprint
// per run, then per finished run while their records are retained, then
// after the retention window.
func (s *scaleServer) hold(ctx context.Context, o options, x *scaleRound) error {
	var wg sync.WaitGroup
	errs := s.startHolds(ctx, &wg)
	if err := s.waitHeld(); err != nil {
		wg.Wait()
		return err
	}
	held, err := s.footprint()
	if err == nil {
		s.snapshot(o, "hold-goroutines.txt", "/debug/pprof/goroutine?debug=1")
		s.snapshot(o, "hold-heap.pprof", "/debug/pprof/heap")
	}
	wg.Wait()
	if err != nil {
		return err
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ended := time.Now()
	// Nothing has been written to the run store since: the 1,000 records
	// (and traces) are all retained.
	retained, err := s.footprint()
	if err != nil {
		return err
	}
	s.snapshot(o, "retained-heap.pprof", "/debug/pprof/heap")
	// The bench's retain_completed is 1 s; the memory store evicts on its
	// next write, which the next run's launch makes.
	time.Sleep(time.Until(ended.Add(1100 * time.Millisecond)))
	if _, err := drive(ctx, s.css[:1], 1, speakCall, time.Millisecond); err != nil {
		return err
	}
	expired, err := s.footprint()
	if err != nil {
		return err
	}
	s.snapshot(o, "expired-heap.pprof", "/debug/pprof/heap")
	x.inFlight = held.perRun(s.idle, inFlight)
	// What the retained records and traces hold is what their eviction
	// gave back; the rest of the difference from idle is the connections
	// the clients and the gateway transport keep open for the next runs.
	x.retained = retained.perRun(expired, inFlight)
	x.expired = expired.perRun(s.idle, 1)
	return nil
}

// startHolds starts 1,000 long runs over the sessions, each on a
// goroutine of wg; run i's error (a tool error included) is errs[i] once
// wg is done.
func (s *scaleServer) startHolds(ctx context.Context, wg *sync.WaitGroup) (errs []error) {
	errs = make([]error, inFlight)
	for i := range inFlight {
		wg.Go(func() {
			res, err := s.css[i%len(s.css)].CallTool(ctx, holdCall())
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %v", res.Content)
			}
			errs[i] = err
		})
	}
	return errs
}

// waitHeld waits until the server counts 1,000 runs in flight, or fails
// a second before the gateway starts answering them.
func (s *scaleServer) waitHeld() error {
	deadline := time.Now().Add(holdWait - time.Second)
	for scrape(s.port)["promptforge_runs_in_flight"] < inFlight {
		if time.Now().After(deadline) {
			return fmt.Errorf("fewer than %d runs in flight %s after starting them", inFlight, holdWait-time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// profile takes a CPU profile of the server for d into the -profile
// directory, if one is given; the returned func waits for it.
func (s *scaleServer) profile(o options, what string, d time.Duration) func() {
	if o.profile == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.snapshot(o, what+".pprof", fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(d.Seconds()))))
	}()
	return func() { <-done }
}

// snapshot saves one debug endpoint's answer into the -profile directory
// as scale-<server>-<name>, if one is given.
func (s *scaleServer) snapshot(o options, name, path string) {
	if o.profile == "" {
		return
	}
	resp, err := http.Get("http://127.0.0.1:" + s.debug + path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return
	}
	defer resp.Body.Close()
	file := filepath.Join(o.profile, "scale-"+strings.Fields(s.name)[0]+"-"+name)
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return
	}
	defer f.Close()
	io.Copy(f, resp.Body)
}

// bigCatalog measures a 10,000-prompt catalog through the process
// boundary: over stdio, boot (spawn to the initialize reply) and the
// reload after one saved file (the write to the server's "reloaded the
// catalog" line, with a 0 s watch debounce) against a full resolve (the
// boot); then a list_prompts page through the full client round trip
// (catalogPages).
func bigCatalog(ctx context.Context, o options) error {
	prompts := filepath.Join(o.dir, "prompts-10k")
	files := make(map[string]string, catalogSize)
	for i := range catalogSize {
		name := fmt.Sprintf("prompt_%05d", i)
		files[name+".md"] = luaPrompt(name, "Prompt number "+name+" of the large benchmark catalog.")
	}
	if err := writePrompts(prompts, files); err != nil {
		return err
	}
	cfg, err := writeConfig(o.dir, "10k", prompts, "", 0, "", `watch = true`, `watch_debounce = "0s"`)
	if err != nil {
		return err
	}
	argv := []string{filepath.Join(o.dir, "promptforge-mcp-server"), "serve", "--stdio", cfg}

	var boots, baseBoots []time.Duration
	var cs *mcp.ClientSession
	var logs *logWatch
	for range 3 {
		if cs != nil {
			cs.Close()
		}
		if o.baseline != "" {
			// The baseline's boot, alternating with ours, so that the
			// two are measured under the same load.
			cmd := exec.Command(filepath.Join(o.dir, "promptforge-baseline"), argv[1:]...)
			t0 := time.Now()
			bs, err := newClient().Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				return fmt.Errorf("boot the baseline: %w", err)
			}
			baseBoots = append(baseBoots, time.Since(t0))
			bs.Close()
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		logs = watchLog(cmd)
		t0 := time.Now()
		cs, err = newClient().Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			return fmt.Errorf("boot: %w", err)
		}
		boots = append(boots, time.Since(t0))
	}
	defer cs.Close()
	slices.Sort(boots)
	boot := boots[len(boots)/2]

	var reloads []time.Duration
	for i := range 5 {
		if !logs.ready() {
			return fmt.Errorf("the server never logged that it watches for changes")
		}
		name := fmt.Sprintf("prompt_%05d", 100+i)
		body := luaPrompt(name, fmt.Sprintf("Prompt number %s, edited %d times.", name, i+1))
		seen := logs.next("reloaded the catalog")
		t0 := time.Now()
		if err := os.WriteFile(filepath.Join(prompts, name+".md"), []byte(body), 0o644); err != nil {
			return err
		}
		select {
		case <-seen:
			reloads = append(reloads, time.Since(t0))
		case <-time.After(30 * time.Second):
			return fmt.Errorf("no reload logged 30 s after saving %s.md", name)
		}
		time.Sleep(200 * time.Millisecond) // let the watcher settle between saves
	}
	slices.Sort(reloads)
	reload := reloads[len(reloads)/2]
	fmt.Printf("catalog of %d prompts over stdio (through the process boundary):\n", catalogSize)
	fmt.Printf("  boot (spawn to the initialize reply, median of 3) %s\n", us(boot))
	if len(baseBoots) > 0 {
		slices.Sort(baseBoots)
		base := baseBoots[len(baseBoots)/2]
		fmt.Printf("  boot of baseline %s, alternating with ours (median of 3) %s: ours / baseline %.2fx\n", o.baseline, us(base), float64(boot)/float64(base))
	}
	fmt.Printf("  reload after one saved file (the save to the reload's log line, median of 5) %s = %.4f of the boot\n", us(reload), float64(reload)/float64(boot))
	return catalogPages(ctx, o, prompts)
}

// scrape reads the gauges of the server's /metrics (nil on failure).
func scrape(port string) map[string]float64 {
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port+"/metrics", nil)
	if err != nil {
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: scrape /metrics:", err)
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out
}

// loadAverage is the 1-minute load average (Linux), "?" elsewhere.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func luaPrompt(name, description string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\npromptforge: 1\n---\n\n# " + strings.ToUpper(name[:1]) + name[1:] + "\n\n## Run\n\n```lua\nreturn args\n```\n"
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// logWatch reads a server's stderr and signals the lines asked for.
type logWatch struct {
	mu       sync.Mutex
	watching bool
	want     string
	seen     chan struct{}
}

func watchLog(cmd *exec.Cmd) *logWatch {
	r, w := io.Pipe()
	cmd.Stderr = w
	lw := &logWatch{}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			lw.mu.Lock()
			if strings.Contains(line, "watching for changes") {
				lw.watching = true
			}
			if lw.seen != nil && strings.Contains(line, lw.want) {
				close(lw.seen)
				lw.seen = nil
			}
			lw.mu.Unlock()
		}
		io.Copy(io.Discard, r)
	}()
	return lw
}

func (lw *logWatch) ready() bool {
	for range 100 {
		lw.mu.Lock()
		ok := lw.watching
		lw.mu.Unlock()
		if ok {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func (lw *logWatch) next(want string) <-chan struct{} {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.want, lw.seen = want, make(chan struct{})
	return lw.seen
}
