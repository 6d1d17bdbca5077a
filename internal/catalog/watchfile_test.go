package catalog

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The pipeline behind WatchFile, fed synthetic platform events inside a
// bubble: an editor's burst is one notice, a burst after the window is
// another, and writes beside the prompt (its store dump) are none.
func TestFileWatchDebouncesSavesAndIgnoresTheStoreDump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := "/prompts"
		prompt := filepath.Join(dir, "p.md")
		events := make(chan fsnotify.Event)
		errs := make(chan error)
		changes, done := startFileWatch(spellings(prompt), events, errs, 300*time.Millisecond, nil)
		count := func() int {
			synctest.Wait()
			n := 0
			for {
				select {
				case <-changes:
					n++
				default:
					return n
				}
			}
		}
		// An editor's write-then-rename save.
		for _, ev := range []fsnotify.Event{
			{Name: filepath.Join(dir, ".p.md.swp"), Op: fsnotify.Create},
			{Name: filepath.Join(dir, ".p.md.swp"), Op: fsnotify.Write},
			{Name: filepath.Join(dir, ".p.md.swp"), Op: fsnotify.Rename},
			{Name: prompt, Op: fsnotify.Create},
			{Name: prompt, Op: fsnotify.Chmod},
		} {
			events <- ev
			time.Sleep(10 * time.Millisecond) // bubble time: within one window
		}
		if n := count(); n != 0 {
			t.Fatalf("%d notices before the window passed", n)
		}
		time.Sleep(300 * time.Millisecond)
		if n := count(); n != 1 {
			t.Fatalf("one save gave %d notices, want 1", n)
		}
		// The run's store dump, beside the prompt: no notice.
		for _, name := range []string{"p.store", "p.store/out.txt", "p.store/.trace/turn-1-request.json"} {
			events <- fsnotify.Event{Name: filepath.Join(dir, name), Op: fsnotify.Create | fsnotify.Write}
		}
		time.Sleep(time.Second)
		if n := count(); n != 0 {
			t.Fatalf("the store dump gave %d notices", n)
		}
		// A second save is a second notice.
		events <- fsnotify.Event{Name: prompt, Op: fsnotify.Write}
		time.Sleep(time.Second)
		if n := count(); n != 1 {
			t.Fatalf("a second save gave %d notices, want 1", n)
		}
		close(events)
		<-done
	})
}

func TestWatchFileSeesASave(t *testing.T) {
	dir := t.TempDir()
	prompt := filepath.Join(dir, "p.md")
	os.WriteFile(prompt, []byte("a"), 0o644)
	w, err := WatchFile(prompt, time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	os.WriteFile(prompt, []byte("b"), 0o644)
	select {
	case <-w.Changes():
	case <-time.After(10 * time.Second):
		t.Fatal("no notice for a save")
	}
}
