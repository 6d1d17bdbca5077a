package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// census answers "which goroutine holds how much stack, and why"
// for a server with 1,000 runs held: the runtime reports only the total
// (stack_inuse), and no profile gives a goroutine's stack size. A Go
// process sent SIGQUIT with GOTRACEBACK=system prints every goroutine's
// frames with their stack and frame pointers (sp=, fp=), so the bytes
// each goroutine's frames occupy where it waits are the distance from its
// innermost sp to its outermost fp. The collector halves a stack while
// less than a quarter of it (plus an 800-byte guard) is used, so after a
// few collections a goroutine waiting with u bytes of frames holds a
// stack between the least power of two above u+800 and the largest at
// most 4(u+800), at least 2 KiB, depending on how far it grew before.
//
// The census ends the server (the -profile run's last step, after every
// round); its dump is at the end of scale-<server>-log.txt.
func (s *scaleServer) census(ctx context.Context, o options) error {
	if o.profile == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	s.startHolds(ctx, &wg) // cancelled below: their errors are not the census's
	if err := s.waitHeld(); err != nil {
		return fmt.Errorf("census: %w", err)
	}
	// Three collections first, as the memory phase does: stacks are
	// counted at the size they shrink to.
	if _, err := s.footprint(); err != nil {
		return err
	}
	p, err := os.FindProcess(s.pid)
	if err != nil {
		return err
	}
	if err := p.Signal(syscall.SIGQUIT); err != nil {
		return err
	}
	s.stderr.wait(s.pid)
	cancel()
	dump := s.stderr.path
	f, err := os.Open(dump)
	if err != nil {
		return err
	}
	defer f.Close()
	kinds := parseCensus(f)
	fmt.Printf("%s: goroutine stacks with %d runs held (SIGQUIT dump at the end of %s): the frames each waits in, the least stack that holds them, and the most the collector leaves it at if it grew that far\n", s.name, inFlight, dump)
	var least, most float64
	for _, k := range kinds {
		if k.count < inFlight/2 {
			continue
		}
		slices.Sort(k.used)
		u := k.used[len(k.used)/2]
		lo, hi := stackBounds(u)
		least += float64(lo) * float64(k.count) / inFlight
		most += float64(hi) * float64(k.count) / inFlight
		fmt.Printf("  %5d  frames %5d B (max %5d), %2d of them: stack %2d to %2d KiB  %s\n", k.count, u, k.used[len(k.used)-1], k.frames, lo>>10, hi>>10, k.name)
	}
	fmt.Printf("  per run: %.0f to %.0f KiB of stacks (the memory phase measures where in between)\n", least/1024, most/1024)
	return nil
}

// stackBounds is the least stack that holds a goroutine waiting with used
// bytes of frames (with the runtime's 800-byte guard), and the most the
// collector leaves it at (runtime shrinkstack halves a stack while
// used+guard is under a quarter of it; at least 2 KiB). Where in between
// it is depends on how far it grew before.
func stackBounds(used int) (least, most int) {
	need := used + 800
	least = 2 << 10
	for least <= need {
		least *= 2
	}
	most = least
	for most*2/4 <= need {
		most *= 2
	}
	return least, most
}

type censusKind struct {
	name   string
	count  int
	frames int
	used   []int
}

// parseCensus groups the dump's goroutines by what created them and the
// function they run, with the bytes of stack each one's frames use.
func parseCensus(r io.Reader) []*censusKind {
	byName := map[string]*censusKind{}
	var order []*censusKind
	var (
		in            bool
		lo, hi        uint64
		frames        int
		entry, create string
		lastFunc      string
	)
	flush := func() {
		if !in || hi == 0 {
			in = false
			return
		}
		name := entry + " (created by " + create + ")"
		k := byName[name]
		if k == nil {
			k = &censusKind{name: name}
			byName[name] = k
			order = append(order, k)
		}
		k.count++
		k.frames = frames
		k.used = append(k.used, int(hi-lo))
		in = false
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "goroutine "):
			flush()
			in, lo, hi, frames, entry, create = true, ^uint64(0), 0, 0, "", ""
		case !in:
		case strings.HasPrefix(line, "created by "):
			create = strings.Fields(strings.TrimPrefix(line, "created by "))[0]
		case strings.HasPrefix(line, "\t"):
			if v := hexField(line, "sp="); v != 0 {
				lo = min(lo, v)
				frames++
				if lastFunc != "runtime.goexit" && !strings.HasPrefix(lastFunc, "runtime.") {
					entry = lastFunc
				}
			}
			if v := hexField(line, "fp="); v != 0 {
				hi = max(hi, v)
			}
		case line == "":
			flush()
		default:
			if i := strings.LastIndexByte(line, '('); i > 0 {
				lastFunc = line[:i]
			}
		}
	}
	flush()
	slices.SortFunc(order, func(a, b *censusKind) int { return b.count - a.count })
	return order
}

func hexField(line, key string) uint64 {
	i := strings.Index(line, key)
	if i < 0 {
		return 0
	}
	f := strings.Fields(line[i+len(key):])[0]
	v, _ := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
	return v
}

// serverLog is a server's stderr saved to a file: its log, which times
// each run, and the census's dump. It is kept in the -profile directory
// as scale-<server>-log.txt, else in the benchmark's own.
type serverLog struct{ path string }

func newServerLog(o options, name string) (*serverLog, *os.File, error) {
	dir := o.profile
	if dir == "" {
		dir = o.dir
	}
	path := filepath.Join(dir, "scale-"+strings.Fields(name)[0]+"-log.txt")
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return &serverLog{path: path}, f, nil
}

// size is how much the server has logged so far.
func (l *serverLog) size() int64 {
	fi, err := os.Stat(l.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// elapsed is the run durations the server logged after offset from for
// runs of prompt: each run's terminal line carries elapsed_ms, from its
// registration to its terminal record (runs.Registry).
func (l *serverLog) elapsed(from int64, prompt string) sample {
	var out sample
	f, err := os.Open(l.path)
	if err != nil {
		return out
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return out
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `msg="run reached its terminal state"`) || !strings.Contains(line, " prompt="+prompt+" ") {
			continue
		}
		_, v, ok := strings.Cut(line, " elapsed_ms=")
		if !ok {
			continue
		}
		ms, err := strconv.Atoi(strings.Fields(v)[0])
		if err != nil {
			continue
		}
		out.lat = append(out.lat, time.Duration(ms)*time.Millisecond)
	}
	out.calls = len(out.lat)
	return out
}

// wait waits (at most 30 s) for process pid to have exited, its dump
// written: Linux shows it as a zombie (state Z) until the benchmark's
// stop reaps it.
func (l *serverLog) wait(pid int) {
	for range 1500 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if _, after, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(after, "Z") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
