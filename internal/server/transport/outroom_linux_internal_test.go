//go:build linux

package transport

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newOutRoom on a pipe: a write fits only when it cannot block, which
// capacity less unread bytes does not tell (newOutRoom): here a write of
// three quarters of a page into each slot leaves a quarter of the
// capacity unused, and the next write blocks all the same.
func TestOutRoomOfAPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fits := newOutRoom(w)
	if fits == nil {
		t.Fatal("no room told for a pipe")
	}
	page := unix.Getpagesize()
	var size int
	rc, err := w.SyscallConn() // not w.Fd, which makes w blocking
	if err != nil {
		t.Fatal(err)
	}
	if cerr := rc.Control(func(fd uintptr) { size, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	chunk := make([]byte, page*3/4)
	if !fits(len(chunk)) || !fits(size) || fits(size+1) {
		t.Fatalf("an empty pipe of %d bytes: fits(%d) %v, fits(%d) %v, fits(%d) %v, want true, true, false",
			size, len(chunk), fits(len(chunk)), size, fits(size), size+1, fits(size+1))
	}
	for range size / page {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if unread := size / page * len(chunk); unread+len(chunk) > size {
		t.Fatalf("%d bytes unread of %d: the test needs room for %d more by that count", unread, size, len(chunk))
	}
	if fits(len(chunk)) {
		t.Errorf("every slot is in use, %d of %d bytes: a write of %d fits", size/page*len(chunk), size, len(chunk))
	}
	// The kernel agrees: the write blocks (w is nonblocking under Go's
	// poller, so the deadline ends the wait).
	w.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := w.Write(chunk); !errors.Is(err, os.ErrDeadlineExceeded) || n != 0 {
		t.Fatalf("a write into a full ring: %d bytes, %v; want it blocked", n, err)
	}
	w.SetWriteDeadline(time.Time{})
	if _, err := io.ReadFull(r, make([]byte, size/page*len(chunk))); err != nil {
		t.Fatal(err)
	}
	if !fits(len(chunk)) {
		t.Error("the pipe is read empty: a write does not fit")
	}
}

// A regular file always has room; a writer that is not a file never
// tells.
func TestOutRoomOfOthers(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fits := newOutRoom(f); fits == nil || !fits(1<<30) {
		t.Error("a regular file: a write may block")
	}
	if newOutRoom(io.Discard) != nil {
		t.Error("io.Discard: a room told")
	}
}
