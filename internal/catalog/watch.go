package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/promptforge-go/promptforge/internal/humantime"
)

// tokenBuffer bounds pending change notices. A full buffer already means
// a reload is pending, so further notices are dropped, not queued.
const tokenBuffer = 16

// maxChanged bounds the paths remembered for one reload. Past it (a
// checkout, a copied tree) the reload resolves in full, which then costs
// about what patching that many paths would.
const maxChanged = 4096

// WatchOptions configures Watch.
type WatchOptions struct {
	// ConfigPath is prompts.toml as given on the command line.
	ConfigPath string
	// Debounce is [server].watch_debounce: a reload runs once no change
	// has been seen for this long.
	Debounce time.Duration
	// Load re-reads prompts.toml for each reload.
	Load LoadFunc
	// Logger receives the watcher's lines; nil discards them.
	Logger *slog.Logger
}

// WatchError is a watch that could not be set up.
type WatchError struct {
	// Path is the path that could not be watched; "" when the platform
	// watcher itself could not be created.
	Path string
	Err  error
}

func (e *WatchError) Error() string {
	if e.Path == "" {
		return "create the filesystem watcher: " + e.Err.Error()
	}
	return "watch " + e.Path + ": " + e.Err.Error()
}

func (e *WatchError) Unwrap() error { return e.Err }

// A Watcher reloads a Handle when prompt files or prompts.toml change:
// changes are debounced, each settled window runs one reload and waits
// for it, and a failed watch is re-registered on the next window.
type Watcher struct {
	h         *Handle
	opts      WatchOptions
	log       *slog.Logger
	fsw       *fsnotify.Watcher
	roots     []string // every prompts root in each spelling
	configs   []string // the config file in each spelling
	configDir string

	tokens chan struct{}
	broken atomic.Bool

	// mu guards changed, since and lost: the paths events named since
	// the catalog since was resolved, for the next reload to patch. The
	// next reload resolves in full instead when since is nil (the first
	// reload: the boot catalog was resolved before the watch began, so a
	// save in between has no event) or lost is set (a watch error, the
	// loss of a root, more than maxChanged paths, a full reload that did
	// not publish).
	mu      sync.Mutex
	changed map[string]struct{}
	since   *Catalog
	lost    bool

	ctx    context.Context // cancelled by Close, so a reload stops early
	cancel context.CancelFunc

	closeOnce sync.Once
	pumpDone  chan struct{}
	done      chan struct{}

	// settled, when set (by tests), sees every settled window's reload.
	settled func(ReloadOutcome, error)
}

// Watch starts watching each of h's prompts roots (every directory under
// it, added as directories appear) and the config file's directory. ctx bounds the
// start only; the watcher runs until Close.
func Watch(ctx context.Context, h *Handle, opts WatchOptions) (*Watcher, error) {
	return startWatch(ctx, h, opts, nil)
}

func startWatch(ctx context.Context, h *Handle, opts WatchOptions, settled func(ReloadOutcome, error)) (*Watcher, error) {
	if opts.Load == nil {
		return nil, errors.New("start the prompt watcher: WatchOptions.Load is nil; pass the function that re-reads prompts.toml")
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, &WatchError{Err: err}
	}
	w := &Watcher{
		h:         h,
		opts:      opts,
		log:       opts.Logger,
		fsw:       fsw,
		roots:     allSpellings(h.roots),
		configs:   spellings(opts.ConfigPath),
		configDir: filepath.Dir(opts.ConfigPath),
		tokens:    make(chan struct{}, tokenBuffer),
		changed:   make(map[string]struct{}),
		pumpDone:  make(chan struct{}),
		done:      make(chan struct{}),
		settled:   settled,
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if err := w.register(ctx); err != nil {
		fsw.Close()
		return nil, err
	}
	w.ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go w.pump()
	go func() {
		defer close(w.done)
		debounce(w.tokens, opts.Debounce, w.settle)
		<-w.pumpDone
	}()
	w.log.Info("watching for changes", "config", opts.ConfigPath, "prompts", strings.Join(h.roots, ", "), "debounce", humantime.Format(max(opts.Debounce, 0)))
	return w, nil
}

// Close stops the watcher in order: the Handle stops publishing (so a
// reload in flight is dropped), the platform watcher is closed (which
// lets the debounce loop finish), and Close waits for both goroutines or
// for ctx.
func (w *Watcher) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.h.Shutdown()
		w.cancel()
		w.fsw.Close()
	})
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop the prompt watcher: %w", ctx.Err())
	}
}

// register watches every directory under each root and the config
// directory.
func (w *Watcher) register(ctx context.Context) error {
	for _, root := range w.h.roots {
		if err := w.addTree(ctx, root); err != nil {
			return err
		}
	}
	if err := w.fsw.Add(w.configDir); err != nil {
		return &WatchError{Path: w.configDir, Err: err}
	}
	return nil
}

// addTree watches dir and every directory below it (dir may be a link to
// a directory; links below it are not followed, as in the resolver's walk
// they only lead to files that are watched where they really live or that
// are not confined anyway). A subdirectory we may not read is left out;
// anything else that stops a watch fails the whole registration.
func (w *Watcher) addTree(ctx context.Context, dir string) error {
	return w.addDir(ctx, dir, true)
}

func (w *Watcher) addDir(ctx context.Context, dir string, top bool) error {
	if err := ctx.Err(); err != nil {
		return &WatchError{Path: dir, Err: err}
	}
	if err := w.fsw.Add(dir); err != nil {
		if !top && (errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist)) {
			return nil
		}
		return &WatchError{Path: dir, Err: err}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !top {
			return nil
		}
		return &WatchError{Path: dir, Err: err}
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := w.addDir(ctx, filepath.Join(dir, e.Name()), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// pump turns platform events into change notices until the platform
// watcher closes.
func (w *Watcher) pump() {
	defer close(w.pumpDone)
	defer close(w.tokens)
	pumpEvents(w.fsw.Events, w.fsw.Errors, w.event, func(err error) {
		w.log.Error("filesystem watch failed", "error", err)
		w.broken.Store(true)
		w.poke()
	})
}

// pumpEvents hands each platform event and error to its function until
// the events channel closes.
func pumpEvents(events <-chan fsnotify.Event, errs <-chan error, onEvent func(fsnotify.Event), onErr func(error)) {
	for events != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			onEvent(ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			onErr(err)
		}
	}
}

// changeOps are the operations that can change what resolves; a
// permission or timestamp change alone cannot, and the resolver's own
// reads must never trigger a reload.
const changeOps = fsnotify.Create | fsnotify.Write | fsnotify.Remove | fsnotify.Rename

func (w *Watcher) event(ev fsnotify.Event) {
	if !w.interesting(ev) {
		return
	}
	name := stripVerbatim(filepath.Clean(ev.Name))
	w.note(name)
	if ev.Has(fsnotify.Create) && w.underRoot(name) {
		// fsnotify is not recursive: a new directory needs its own watch
		// (and so does any directory already inside it).
		if isDir(name) {
			if err := w.addTree(w.ctx, name); err != nil {
				w.log.Error("filesystem watch failed", "error", err)
				w.broken.Store(true)
			}
		}
	}
	if ev.Has(fsnotify.Remove|fsnotify.Rename) && slices.Contains(w.roots, name) {
		// A root's own watch is gone with it; re-register once it is back.
		w.broken.Store(true)
	}
	if ev.Has(fsnotify.Rename) && slices.Contains(w.fsw.WatchList(), name) {
		// A directory moved within a root: fsnotify drops its watch when
		// the move reaches it (IN_MOVE_SELF), which can come after the
		// Create that watched it under its new name, so saves in it might
		// go unseen. Re-registering watches it again, and the reload that
		// follows resolves in full.
		w.broken.Store(true)
	}
	w.poke()
}

// interesting reports whether ev may change the catalog: it changes
// something under a prompts root, or prompts.toml itself.
func (w *Watcher) interesting(ev fsnotify.Event) bool {
	if ev.Op&changeOps == 0 {
		return false
	}
	name := stripVerbatim(filepath.Clean(ev.Name))
	if w.underRoot(name) || slices.Contains(w.configs, name) {
		return true
	}
	if filepath.IsAbs(name) {
		return false
	}
	abs, err := filepath.Abs(name)
	return err == nil && (w.underRoot(abs) || slices.Contains(w.configs, abs))
}

func (w *Watcher) underRoot(name string) bool {
	for _, r := range w.roots {
		if within(r, name) {
			return true
		}
	}
	return false
}

// note remembers a changed path under a root for the next reload.
func (w *Watcher) note(name string) {
	if !w.underRoot(name) {
		abs, err := filepath.Abs(name)
		if err != nil || !w.underRoot(abs) {
			return // prompts.toml: the reload compares the settings it loads
		}
		name = abs
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.remember(name)
}

// remember adds paths to changed, giving up on them (lost) past
// maxChanged. w.mu must be held.
func (w *Watcher) remember(paths ...string) {
	for _, p := range paths {
		w.changed[p] = struct{}{}
	}
	if len(w.changed) > maxChanged {
		w.lost = true
		clear(w.changed)
	}
}

func (w *Watcher) poke() {
	select {
	case w.tokens <- struct{}{}:
	default:
	}
}

// settle is one settled window.
func (w *Watcher) settle() {
	if w.h.isShutdown() {
		return
	}
	if w.broken.Swap(false) {
		w.reregister()
		w.mu.Lock()
		w.lost = true // events may have been missed
		w.mu.Unlock()
	}
	w.mu.Lock()
	var changes *changeSet
	if w.since != nil && !w.lost {
		changes = &changeSet{since: w.since, paths: make([]string, 0, len(w.changed))}
		for p := range w.changed {
			changes.paths = append(changes.paths, p)
		}
	}
	w.lost = false
	clear(w.changed)
	w.mu.Unlock()
	out, err := w.h.reload(w.ctx, w.opts.Load, changes)
	w.mu.Lock()
	switch {
	case err == nil && out.Published:
		// Paths noted since this reload began may be older than what it
		// read, or newer: patching them again is harmless either way.
		w.since = out.catalog
	case changes != nil:
		// Nothing published: the next reload starts from the same
		// catalog, so it needs these paths too.
		w.remember(changes.paths...)
	default:
		w.lost = true
	}
	w.mu.Unlock()
	if err == nil && out.RetrievalStale {
		w.log.Warn("reload kept the previous, now stale, retrieval index; run_prompt is unaffected")
	}
	if w.settled != nil {
		w.settled(out, err)
	}
}

// reregister drops every watch and adds them again, after a watch error
// or the loss of a root.
func (w *Watcher) reregister() {
	for _, p := range w.fsw.WatchList() {
		_ = w.fsw.Remove(p) // it may be gone already; re-adding is what matters
	}
	if err := w.register(w.ctx); err != nil {
		w.log.Error("live reload has stopped: saved prompts will no longer be picked up; restart the server once the path is back", "error", err)
		return
	}
	w.log.Info("re-registered the watch", "prompts", strings.Join(w.h.roots, ", "), "config_dir", w.configDir)
}

// debounce runs settle once per burst of tokens: each token restarts the
// window, and settle runs (and is waited for) when the window passes
// quietly. Tokens that arrive during settle open the next window. When
// tokens closes, an open window settles once and debounce returns.
func debounce(tokens <-chan struct{}, window time.Duration, settle func()) {
	for {
		if _, ok := <-tokens; !ok {
			return
		}
		timer := time.NewTimer(window)
	wait:
		for {
			select {
			case _, ok := <-tokens:
				if !ok {
					timer.Stop()
					settle()
					return
				}
				timer.Reset(window)
			case <-timer.C:
				break wait
			}
		}
		settle()
	}
}

// allSpellings are the spellings of every path in paths.
func allSpellings(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, spellings(p)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// spellings are the forms an event may name p in: as configured,
// absolute, and with symlinks evaluated.
func spellings(p string) []string {
	out := []string{stripVerbatim(filepath.Clean(p))}
	if abs, err := filepath.Abs(p); err == nil {
		out = append(out, stripVerbatim(abs))
	}
	if canon, err := filepath.EvalSymlinks(p); err == nil {
		if abs, err := filepath.Abs(canon); err == nil {
			out = append(out, stripVerbatim(abs))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// stripVerbatim removes Windows' \\?\ prefix so both spellings compare
// equal. Elsewhere it is an ordinary file name prefix.
func stripVerbatim(p string) string {
	if runtime.GOOS == "windows" {
		return strings.TrimPrefix(p, `\\?\`)
	}
	return p
}

// isDir reports whether p is a directory itself (not a link to one: links
// are not followed by the walk either).
func isDir(p string) bool {
	info, err := os.Lstat(p)
	return err == nil && info.IsDir()
}

// isShutdown reports whether the Handle has stopped publishing.
func (h *Handle) isShutdown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shutdown
}
