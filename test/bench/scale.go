package main

import (
	"bufio"
	"context"
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
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The scale figures of issue #12.
const (
	inFlight    = 1000
	gatewayWait = 200 * time.Millisecond
	catalogSize = 10000
)

// proseAtScale keeps 1,000 run_prompt calls of a one-turn prose prompt in
// flight over streamable HTTP against the scripted gateway, which answers
// each after 200 ms, and reports runs/s, the latency the server adds over
// the gateway's 200 ms, and the server process's resident memory per
// in-flight run (its RSS under load less its RSS idle, divided by 1,000).
func proseAtScale(ctx context.Context, o options) error {
	gw, stopGateway, gwPid, err := startGateway(ctx, o)
	if err != nil {
		return err
	}
	defer stopGateway()
	prompts := filepath.Join(o.dir, "prompts-speak")
	if err := writePrompts(prompts, map[string]string{"speak.md": speakPrompt}); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	cfg, err := writeConfig(o.dir, "scale", prompts, port, inFlight+100, gw)
	if err != nil {
		return err
	}
	connect, stop, pid, err := startHTTP([]string{filepath.Join(o.dir, "promptforge-mcp-server"), "serve", cfg}, port, "2025-11-25", profileEnv(o, "scale-prose", 10*time.Second))
	if err != nil {
		return err
	}
	defer stop()
	const sessions = 50
	var css []*mcp.ClientSession
	defer func() {
		for _, cs := range css {
			cs.Close()
		}
	}()
	for range sessions {
		cs, err := connect(ctx)
		if err != nil {
			return err
		}
		css = append(css, cs)
	}
	call := func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "run_prompt", Arguments: map[string]any{"prompt": "speak"}}
	}
	// Warm up with a few runs, then read the idle footprint.
	if _, err := drive(ctx, css[:1], 4, call, time.Second); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	idle := rssBytes(pid)
	idleStats := scrape(port)
	var loadStats map[string]float64

	var peak atomic.Int64
	var samples []int64
	var mu sync.Mutex
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
				r := rssBytes(pid)
				mu.Lock()
				samples = append(samples, r)
				mu.Unlock()
				if r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	})
	// A first second fills the server up to 1,000 in flight; only the
	// steady state after it is counted.
	if _, err := drive(ctx, css, inFlight, call, time.Second); err != nil {
		close(done)
		wg.Wait()
		return err
	}
	wg.Go(func() {
		// Halfway through the steady state: the runtime's own account of
		// where the memory is (the server's /metrics).
		select {
		case <-done:
		case <-time.After(3 * o.duration / 2):
			m := scrape(port)
			mu.Lock()
			loadStats = m
			mu.Unlock()
		}
	})
	pids := []int{pid, gwPid, os.Getpid()}
	cpu0 := make([]time.Duration, len(pids))
	for i, p := range pids {
		cpu0[i] = cpuTime([]int{p})
	}
	s, err := drive(ctx, css, inFlight, call, 3*o.duration)
	cpu := make([]float64, len(pids)) // CPU per run, µs
	for i, p := range pids {
		cpu[i] = float64((cpuTime([]int{p}) - cpu0[i]).Microseconds()) / float64(max(s.calls, 1))
	}
	close(done)
	wg.Wait()
	if err != nil {
		return err
	}
	slices.Sort(samples)
	loaded := samples[len(samples)/2]
	fmt.Printf("prose runs at scale: %d in flight over HTTP, the gateway answering each after %s (one server process, %d sessions)\n", inFlight, gatewayWait, sessions)
	fmt.Printf("  runs/s %.0f   latency p50 %s p90 %s p99 %s   added over the gateway's: p50 %s p99 %s\n",
		s.rate(), us(s.pct(0.5)), us(s.pct(0.9)), us(s.pct(0.99)), us(s.pct(0.5)-gatewayWait), us(s.pct(0.99)-gatewayWait))
	fmt.Printf("  CPU per run: server %.0fµs, gateway %.0fµs, this client %.0fµs: %.0f runs/s would fill 2 idle cores (machine load average now %s)\n",
		cpu[0], cpu[1], cpu[2], 2e6/(cpu[0]+cpu[1]+cpu[2]), loadAverage())
	fmt.Printf("  server RSS idle %.1f MB, under load %.1f MB (median of %d samples; peak %.1f MB): %.1f KB per in-flight run\n",
		mb(idle), mb(loaded), len(samples), mb(peak.Load()), float64(loaded-idle)/inFlight/1024)
	if idleStats != nil && loadStats != nil {
		per := func(k string) float64 { return (loadStats[k] - idleStats[k]) / inFlight }
		fmt.Printf("  per in-flight run, from the server's /metrics: %.1f goroutines, %.1f KB of goroutine stacks, %.1f KB of heap in use (%.1f KB of heap allocated and not yet collected)\n\n",
			per("go_goroutines"), per("go_memstats_stack_inuse_bytes")/1024, per("go_memstats_heap_inuse_bytes")/1024, per("go_memstats_heap_alloc_bytes")/1024)
	}
	return nil
}

// bigCatalog measures a 10,000-prompt catalog through the process
// boundary over stdio: boot (spawn to the initialize reply), a
// list_prompts page through the full client round trip, and the reload
// after one saved file (the write to the server's "reloaded the catalog"
// line, with a 0 s watch debounce) against a full resolve (the boot).
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

	var boots []time.Duration
	var cs *mcp.ClientSession
	var logs *logWatch
	for range 3 {
		if cs != nil {
			cs.Close()
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

	page := func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "list_prompts", Arguments: map[string]any{"cursor": "5000"}}
	}
	s, err := drive(ctx, []*mcp.ClientSession{cs}, 1, page, o.duration)
	if err != nil {
		return err
	}

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
	fmt.Printf("  list_prompts page (100 entries, full client round trip): %.0f calls/s, p50 %s p90 %s p99 %s\n", s.rate(), us(s.pct(0.5)), us(s.pct(0.9)), us(s.pct(0.99)))
	fmt.Printf("  reload after one saved file (the save to the reload's log line, median of 5) %s = %.4f of the boot\n", us(reload), float64(reload)/float64(boot))
	return nil
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
