package catalog

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

const window = 500 * time.Millisecond

// runDebounce runs the debounce loop over a fresh token channel, counting
// settles.
func runDebounce(settle func()) (chan struct{}, <-chan struct{}) {
	tokens := make(chan struct{}, tokenBuffer)
	done := make(chan struct{})
	go func() {
		defer close(done)
		debounce(tokens, window, settle)
	}()
	return tokens, done
}

func TestDebounce(t *testing.T) {
	t.Run("a burst settles once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var settles atomic.Int32
			tokens, done := runDebounce(func() { settles.Add(1) })
			for range 5 {
				tokens <- struct{}{}
				time.Sleep(window / 5) // inside the window: each token restarts it
			}
			synctest.Wait()
			if n := settles.Load(); n != 0 {
				t.Errorf("settled %d times before the window passed", n)
			}
			time.Sleep(window)
			synctest.Wait()
			if n := settles.Load(); n != 1 {
				t.Errorf("settled %d times, want 1", n)
			}
			close(tokens)
			<-done
		})
	})
	t.Run("one event settles once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var settles atomic.Int32
			tokens, done := runDebounce(func() { settles.Add(1) })
			tokens <- struct{}{}
			time.Sleep(window + time.Millisecond)
			synctest.Wait()
			if n := settles.Load(); n != 1 {
				t.Errorf("settled %d times, want 1", n)
			}
			close(tokens)
			<-done
			if n := settles.Load(); n != 1 {
				t.Errorf("closing with no open window settled again (%d)", n)
			}
		})
	})
	t.Run("separated bursts settle twice", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var settles atomic.Int32
			tokens, done := runDebounce(func() { settles.Add(1) })
			for _, burst := range []int{3, 4} {
				for range burst {
					tokens <- struct{}{}
				}
				time.Sleep(2 * window)
			}
			synctest.Wait()
			if n := settles.Load(); n != 2 {
				t.Errorf("settled %d times, want 2", n)
			}
			close(tokens)
			<-done
		})
	})
	t.Run("closing mid-window settles once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var settles atomic.Int32
			tokens, done := runDebounce(func() { settles.Add(1) })
			tokens <- struct{}{}
			tokens <- struct{}{}
			close(tokens)
			<-done
			if n := settles.Load(); n != 1 {
				t.Errorf("settled %d times, want 1", n)
			}
		})
	})
	t.Run("settle is awaited; tokens during it open the next window", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var settles, running, overlap atomic.Int32
			tokens, done := runDebounce(func() {
				if running.Add(1) > 1 {
					overlap.Add(1)
				}
				time.Sleep(3 * window) // a slow reload
				settles.Add(1)
				running.Add(-1)
			})
			tokens <- struct{}{}
			time.Sleep(window + time.Millisecond) // the reload is now running
			for range 3 {
				tokens <- struct{}{}
			}
			time.Sleep(10 * window)
			synctest.Wait()
			if n := settles.Load(); n != 2 {
				t.Errorf("settled %d times, want 2", n)
			}
			if overlap.Load() != 0 {
				t.Errorf("a settle started while another was running")
			}
			close(tokens)
			<-done
		})
	})
}

func TestEventFilter(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "prompts")
	writePrompt(t, root, "a.md", "alpha", "First.")
	config := writeFile(t, base, "conf/prompts.toml", "")
	writeFile(t, base, "conf/prompts.env", "")
	h := newHandle(t, mdSettings(root), Options{})
	w := &Watcher{h: h, roots: spellings(root), configs: spellings(config)}

	ev := func(name string, op fsnotify.Op) fsnotify.Event { return fsnotify.Event{Name: name, Op: op} }
	tests := []struct {
		name string
		ev   fsnotify.Event
		want bool
	}{
		{"file under prompts", ev(filepath.Join(root, "a.md"), fsnotify.Write), true},
		{"nested file", ev(filepath.Join(root, "x/y/z.md"), fsnotify.Create), true},
		{"removed file", ev(filepath.Join(root, "a.md"), fsnotify.Remove), true},
		{"renamed file", ev(filepath.Join(root, "a.md"), fsnotify.Rename), true},
		{"the root itself", ev(root, fsnotify.Remove), true},
		{"config modified", ev(config, fsnotify.Write), true},
		{"config created", ev(config, fsnotify.Create), true},
		{"config's neighbour", ev(filepath.Join(base, "conf/prompts.env"), fsnotify.Write), false},
		{"same-named config elsewhere", ev(filepath.Join(base, "prompts.toml"), fsnotify.Write), false},
		{"sibling with a shared prefix", ev(root+"-old/a.md", fsnotify.Write), false},
		{"same-named dir elsewhere", ev(filepath.Join(base, "other/prompts/a.md"), fsnotify.Write), false},
		{"metadata only", ev(filepath.Join(root, "a.md"), fsnotify.Chmod), false},
	}
	for _, tt := range tests {
		if got := w.interesting(tt.ev); got != tt.want {
			t.Errorf("%s: interesting(%v) = %v, want %v", tt.name, tt.ev, got, tt.want)
		}
	}
}

func TestEventFilterSpellings(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	writePrompt(t, real, "a.md", "alpha", "First.")
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	t.Chdir(base)

	tests := []struct {
		root, event string
		want        bool
	}{
		{"real", filepath.Join(base, "real", "a.md"), true},                // relative root, absolute event
		{"real", filepath.Join("real", "a.md"), true},                      // relative root, relative event
		{"./real/", filepath.Join("real", "a.md"), true},                   // dotted root
		{filepath.Join(base, "real"), filepath.Join("real", "a.md"), true}, // absolute root, relative event
		{"link", filepath.Join(base, "real", "a.md"), true},                // symlinked root, canonical event
		{"link", filepath.Join("link", "a.md"), true},                      // symlinked root, as configured
		{"real", filepath.Join(base, "realm", "a.md"), false},              // a sibling
	}
	for _, tt := range tests {
		w := &Watcher{roots: spellings(tt.root)}
		if got := w.interesting(fsnotify.Event{Name: tt.event, Op: fsnotify.Write}); got != tt.want {
			t.Errorf("root %q, event %q: %v, want %v (spellings %v)", tt.root, tt.event, got, tt.want, w.roots)
		}
	}
}

func TestWindowsVerbatimSpellings(t *testing.T) {
	t.Skip(`\\?\ verbatim paths exist only on Windows; stripVerbatim is a no-op elsewhere`)
}

func TestWatchStartErrors(t *testing.T) {
	base := t.TempDir()
	config := writeFile(t, base, "prompts.toml", "")
	root := filepath.Join(base, "prompts")
	writePrompt(t, root, "a.md", "alpha", "First.")
	h := newHandle(t, mdSettings(root), Options{})
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	_, err := Watch(context.Background(), h, WatchOptions{ConfigPath: config, Debounce: window, Load: fixed(mdSettings(root))})
	var we *WatchError
	if !errors.As(err, &we) || we.Path != root || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want a WatchError naming %s", err, root)
	}
	if !strings.HasPrefix(err.Error(), "watch "+root+": ") {
		t.Errorf("message = %q", err.Error())
	}
	created := &WatchError{Err: errors.New("too many open files")}
	if created.Error() != "create the filesystem watcher: too many open files" {
		t.Errorf("create error = %q", created.Error())
	}
}

func TestSettleAfterShutdownPublishesNothing(t *testing.T) {
	root := t.TempDir()
	writePrompt(t, root, "a.md", "alpha", "First.")
	h := newHandle(t, mdSettings(root), Options{})
	before := h.Current()
	var loads atomic.Int32
	w := &Watcher{h: h, opts: WatchOptions{Load: func(ctx context.Context) (Settings, []string, error) {
		loads.Add(1)
		return mdSettings(root), nil, nil
	}}, ctx: context.Background()}
	h.Shutdown()
	writePrompt(t, root, "b.md", "beta", "Second.")
	w.settle()
	if loads.Load() != 0 || h.Current() != before {
		t.Errorf("a settle after shutdown reloaded (%d loads)", loads.Load())
	}
}

// TestWatcherReloadsOnSave drives the real fsnotify wiring: saving files
// (including in a directory created after the watch started) reloads.
func TestWatcherReloadsOnSave(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "prompts")
	config := writeFile(t, base, "prompts.toml", "")
	writePrompt(t, root, "a.md", "alpha", "First.")
	h := newHandle(t, mdSettings(root), Options{})

	lw := startLiveWatch(t, h, config, mdSettings(root), nil)
	waitFor := func(want string) { t.Helper(); lw.waitFor(t, want) }
	writePrompt(t, root, "b.md", "beta", "Second.")
	waitFor("beta")

	// A directory created now needs its own watch before files in it are seen.
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor("beta") // the directory's own creation settles a window
	writePrompt(t, root, "sub/c.md", "gamma", "Third.")
	waitFor("gamma")

	// Touching prompts.toml alone reloads too.
	if err := os.WriteFile(config, []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lw.reloads:
	case <-time.After(10 * time.Second):
		t.Fatal("saving prompts.toml did not reload")
	}
}

// liveWatch is a watcher over real files with a short debounce, closed
// when the test ends.
type liveWatch struct {
	w       *Watcher
	h       *Handle
	reloads chan ReloadOutcome // every settled reload
}

func startLiveWatch(t *testing.T, h *Handle, config string, s Settings, logger *slog.Logger) *liveWatch {
	t.Helper()
	lw := &liveWatch{h: h, reloads: make(chan ReloadOutcome, 16)}
	w, err := startWatch(context.Background(), h, WatchOptions{
		ConfigPath: config, Debounce: 20 * time.Millisecond, Load: fixed(s), Logger: logger,
	}, func(out ReloadOutcome, err error) {
		if err != nil {
			t.Errorf("reload: %v", err)
		}
		lw.reloads <- out
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	lw.w = w
	return lw
}

// waitFor waits for a reload that makes want healthy.
func (lw *liveWatch) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case <-lw.reloads:
			if _, ok := lw.h.Current().Catalog().Healthy(want); ok {
				return
			}
		case <-timeout:
			t.Fatalf("no reload brought in %q; live: %v", want, entryNames(lw.h.Current().Catalog()))
		}
	}
}

func TestWatcherReregistersAfterWatchError(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "prompts")
	config := writeFile(t, base, "prompts.toml", "")
	writePrompt(t, root, "a.md", "alpha", "First.")
	logs := &logBuffer{}
	h := newHandle(t, mdSettings(root), Options{})
	reloads := make(chan struct{}, 16)
	w, err := startWatch(context.Background(), h, WatchOptions{
		ConfigPath: config, Debounce: 10 * time.Millisecond, Load: fixed(mdSettings(root)), Logger: logs.logger(),
	}, func(ReloadOutcome, error) { reloads <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	if !strings.Contains(logs.String(), `msg="watching for changes" config=`+config+" prompts="+root+" debounce=10ms") {
		t.Errorf("start line missing:\n%s", logs)
	}

	w.broken.Store(true)
	w.poke()
	select {
	case <-reloads:
	case <-time.After(10 * time.Second):
		t.Fatal("no settle")
	}
	if !strings.Contains(logs.String(), `msg="re-registered the watch" prompts=`+root+" config_dir="+base) {
		t.Errorf("logs:\n%s", logs)
	}
	if !slices.Contains(w.fsw.WatchList(), root) {
		t.Errorf("root not watched after re-registering: %v", w.fsw.WatchList())
	}

	os.RemoveAll(root)
	w.broken.Store(true)
	w.poke()
	select {
	case <-reloads:
	case <-time.After(10 * time.Second):
		t.Fatal("no settle")
	}
	if !strings.Contains(logs.String(), `msg="live reload has stopped: saved prompts will no longer be picked up; restart the server once the path is back" error="watch `+root) {
		t.Errorf("logs:\n%s", logs)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "prompts")
	config := writeFile(t, base, "prompts.toml", "")
	writePrompt(t, root, "a.md", "alpha", "First.")
	h := newHandle(t, mdSettings(root), Options{})
	w, err := Watch(context.Background(), h, WatchOptions{ConfigPath: config, Debounce: time.Hour, Load: fixed(mdSettings(root))})
	if err != nil {
		t.Fatal(err)
	}
	writePrompt(t, root, "b.md", "beta", "Second.") // opens a window Close must not wait out
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, ok := h.Current().Catalog().Healthy("beta"); ok {
		t.Errorf("a reload published after Close")
	}
}
