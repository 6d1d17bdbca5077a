//go:build linux

package catalog

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A prompt file another open holds a write lease on (what Samba's kernel
// oplocks and an NFS server's delegations take) is read once the holder
// lets go, as os.Open waits for it: an O_NONBLOCK open is refused with
// EWOULDBLOCK instead (fcntl(2), F_SETLEASE), which made the prompt
// "unreadable: resource temporarily unavailable".
func TestReadFileWaitsForAWriteLease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leased.md")
	src := promptText("leased", "A prompt under a lease.")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := setLease(holder, syscall.F_WRLCK); err != nil {
		t.Skipf("no write lease on this filesystem: %v", err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(200 * time.Millisecond)
		if err := setLease(holder, syscall.F_UNLCK); err != nil {
			t.Errorf("release the lease: %v", err)
		}
	}()
	st, problem := readFile(path, nil, nil, time.Now())
	<-released
	if problem != "" {
		t.Fatalf("a leased file read as %q; want it read once the lease is released", problem)
	}
	if st.c.source != src {
		t.Fatalf("read %q, want %q", st.c.source, src)
	}
}

func setLease(f *os.File, typ int) error {
	_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_SETLEASE, uintptr(typ))
	if errno != 0 {
		return errno
	}
	return nil
}
