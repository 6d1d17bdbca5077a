package devrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func TestDumpReconciles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.store")
	res, err := Dump(dir, map[string]string{"a.txt": "one", "sub/b.txt": "two", "old.txt": "x", "gone/c.txt": "y"})
	if err != nil || res.Written != 4 || len(res.Notes) != 0 {
		t.Fatalf("first dump: %+v, %v", res, err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("dir mode %v, want owner-only", m)
	}
	if m := mode(t, filepath.Join(dir, "sub/b.txt")); m != 0o600 {
		t.Errorf("file mode %v, want owner-only", m)
	}
	os.MkdirAll(filepath.Join(dir, TraceDir), 0o700)
	os.WriteFile(filepath.Join(dir, TraceDir, "turn-1-request.json"), []byte("{}"), 0o600)

	res, err = Dump(dir, map[string]string{"a.txt": "one", "sub/b.txt": "TWO"})
	if err != nil || res.Written != 1 || res.Unchanged != 1 || res.Removed != 2 {
		t.Fatalf("second dump: %+v, %v", res, err)
	}
	if got := read(t, filepath.Join(dir, "sub/b.txt")); got != "TWO" {
		t.Errorf("b.txt = %q", got)
	}
	for _, stale := range []string{"old.txt", "gone/c.txt", "gone"} {
		if _, err := os.Lstat(filepath.Join(dir, stale)); !os.IsNotExist(err) {
			t.Errorf("stale %s still there: %v", stale, err)
		}
	}
	if got := read(t, filepath.Join(dir, TraceDir, "turn-1-request.json")); got != "{}" {
		t.Errorf(".trace not kept: %q", got)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".pf-tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestDumpNeverWritesThroughALink(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	os.Mkdir(outside, 0o700)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("keep"), 0o600)
	dir := filepath.Join(root, "p.store")
	os.Mkdir(dir, 0o700)
	os.Symlink(outside, filepath.Join(dir, "linked"))
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "file.txt"))

	res, err := Dump(dir, map[string]string{
		"linked/secret.txt": "overwritten",
		"file.txt":          "overwritten",
		".trace/x.json":     "no",
		"ok.txt":            "yes",
	})
	if err != nil || res.Written != 1 {
		t.Fatalf("dump: %+v, %v", res, err)
	}
	if got := read(t, filepath.Join(outside, "secret.txt")); got != "keep" {
		t.Fatalf("written through a link: %q", got)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"linked/secret.txt skipped", "file.txt skipped", "symbolic link", ".trace/x.json skipped", "left alone"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	// The links themselves are left in place.
	if _, err := os.Readlink(filepath.Join(dir, "file.txt")); err != nil {
		t.Errorf("the link was removed: %v", err)
	}

	link := filepath.Join(root, "link.store")
	os.Symlink(outside, link)
	if _, err := Dump(link, map[string]string{"a": "b"}); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("a linked store directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "a")); !os.IsNotExist(err) {
		t.Fatalf("written through the linked directory")
	}
}

func TestCaptureWritesEveryTurn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.store")
	os.MkdirAll(filepath.Join(dir, TraceDir), 0o700)
	os.WriteFile(filepath.Join(dir, TraceDir, "turn-9-request.json"), []byte("old run"), 0o600)
	c, err := StartCapture(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Add(1, []byte(`{"model":"m"}`), []byte(`{"choices":[]}`))
	c.Add(2, []byte(`{"n":2}`), []byte(`{"r":2}`))
	written, dropped, err := c.Close()
	if err != nil || written != 2 || dropped != 0 {
		t.Fatalf("Close = %d, %d, %v", written, dropped, err)
	}
	if got := read(t, filepath.Join(dir, TraceDir, "turn-1-request.json")); got != `{"model":"m"}` {
		t.Errorf("request = %q", got)
	}
	if got := read(t, filepath.Join(dir, TraceDir, "turn-2-response.json")); got != `{"r":2}` {
		t.Errorf("response = %q", got)
	}
	if m := mode(t, filepath.Join(dir, TraceDir, "turn-1-response.json")); m != 0o600 {
		t.Errorf("mode %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, TraceDir, "turn-9-request.json")); !os.IsNotExist(err) {
		t.Errorf("the previous run's turn is still there")
	}
	c.Add(3, nil, nil)
	if _, dropped, _ := c.Close(); dropped != 1 {
		t.Errorf("a turn after Close: dropped %d, want 1", dropped)
	}
}

func TestCaptureQueueIsBounded(t *testing.T) {
	c, err := StartCapture(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		c.Add(i+1, []byte("{}"), []byte("{}"))
	}
	written, dropped, err := c.Close()
	if err != nil || written+dropped != n || written == 0 {
		t.Fatalf("written %d + dropped %d != %d (%v)", written, dropped, n, err)
	}
	if s := Summary("d", 3, 2); s != "captured 3 model turn(s) in d; 2 dropped because the writer fell behind" {
		t.Errorf("Summary = %q", s)
	}
}

// A dump removes only what an earlier dump wrote: pointed (by a slip of
// --store-dir) at a directory that holds other files, such as the prompt's
// own, it adds the store's files and deletes nothing else.
func TestDumpRemovesOnlyWhatItWrote(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("# mine"), 0o644)
	os.MkdirAll(filepath.Join(dir, "notes"), 0o755)
	os.WriteFile(filepath.Join(dir, "notes", "todo.txt"), []byte("mine too"), 0o644)
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)

	res, err := Dump(dir, map[string]string{"a.txt": "one", "sub/b.txt": "two"})
	if err != nil || res.Written != 2 || res.Removed != 0 {
		t.Fatalf("first dump: %+v, %v", res, err)
	}
	res, err = Dump(dir, map[string]string{"a.txt": "one"})
	if err != nil || res.Removed != 1 {
		t.Fatalf("second dump: %+v, %v", res, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("the directory the stale file left empty is still there: %v", err)
	}
	for path, want := range map[string]string{"prompt.md": "# mine", "notes/todo.txt": "mine too", "a.txt": "one"} {
		if got := read(t, filepath.Join(dir, path)); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if info, err := os.Lstat(filepath.Join(dir, "empty")); err != nil || !info.IsDir() {
		t.Errorf("an empty directory the dump did not make was removed: %v", err)
	}
	// The record of what was written is not a store file: a store path
	// with its name is skipped, and a hostile record cannot point outside.
	os.WriteFile(filepath.Join(dir, manifestName), []byte("../outside.txt\nprompt.md\n"), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(dir), "outside.txt"), []byte("keep"), 0o600)
	res, err = Dump(dir, map[string]string{manifestName: "x", "a.txt": "one"})
	if err != nil || !strings.Contains(strings.Join(res.Notes, "\n"), manifestName+" skipped") {
		t.Fatalf("a store file named like the record: %+v, %v", res, err)
	}
	if got := read(t, filepath.Join(filepath.Dir(dir), "outside.txt")); got != "keep" {
		t.Errorf("a file outside the directory was changed: %q", got)
	}
}
