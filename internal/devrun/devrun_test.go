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
