package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// A FileWatcher tells when one prompt file was saved: the run command's
// --watch. It shares the catalog watcher's platform watch and debounce, so
// an editor's write-then-rename burst is one change, and it watches the
// file's directory but not below it, so nothing written into a directory
// beside the prompt (the run's store dump, its .trace/) is a change.
type FileWatcher struct {
	fsw     *fsnotify.Watcher
	changes chan struct{}
	stop    func()
	done    chan struct{}
	once    sync.Once
}

// WatchFile starts watching the file at path: after each burst of changes
// to it, once debounce has passed without another, Changes delivers one
// notice. Close stops it.
func WatchFile(path string, debounce time.Duration, logger *slog.Logger) (*FileWatcher, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, &WatchError{Err: err}
	}
	dir := filepath.Dir(path)
	if err := fsw.Add(dir); err != nil {
		fsw.Close()
		return nil, &WatchError{Path: dir, Err: err}
	}
	w := &FileWatcher{fsw: fsw}
	w.changes, w.done = startFileWatch(spellings(path), fsw.Events, fsw.Errors, debounce, logger)
	return w, nil
}

// Changes delivers a notice per settled burst of changes. A notice not
// yet taken absorbs the next ones: a reader that was busy sees one.
func (w *FileWatcher) Changes() <-chan struct{} { return w.changes }

// Close stops the watch and waits for its goroutines, or for ctx.
func (w *FileWatcher) Close(ctx context.Context) error {
	w.once.Do(func() { w.fsw.Close() })
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop the prompt file watcher: %w", ctx.Err())
	}
}

// startFileWatch turns events naming the file (in any of names, its
// spellings) into debounced notices, until events closes. It starts two
// goroutines, a pump and the debounce loop, both done when done closes.
func startFileWatch(names []string, events <-chan fsnotify.Event, errs <-chan error, window time.Duration, logger *slog.Logger) (changes chan struct{}, done chan struct{}) {
	tokens := make(chan struct{}, tokenBuffer)
	changes = make(chan struct{}, 1)
	done = make(chan struct{})
	pumpDone := make(chan struct{})
	go func() {
		defer close(pumpDone)
		defer close(tokens)
		pumpEvents(events, errs, func(ev fsnotify.Event) {
			if ev.Op&changeOps != 0 && namesFile(names, ev.Name) {
				select {
				case tokens <- struct{}{}:
				default:
				}
			}
		}, func(err error) {
			logger.Error("watching the prompt file failed; saves may be missed", "error", err)
		})
	}()
	go func() {
		defer close(done)
		debounce(tokens, window, func() {
			select {
			case changes <- struct{}{}:
			default:
			}
		})
		<-pumpDone
	}()
	return changes, done
}

// namesFile reports whether an event's name is the file, in any spelling.
func namesFile(names []string, name string) bool {
	name = stripVerbatim(filepath.Clean(name))
	if slices.Contains(names, name) {
		return true
	}
	abs, err := filepath.Abs(name)
	return err == nil && slices.Contains(names, stripVerbatim(abs))
}
