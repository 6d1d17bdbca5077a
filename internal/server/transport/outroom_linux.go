//go:build linux

package transport

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// newOutRoom returns what tells whether a write of n bytes to out cannot
// block (fastLane's lazy read, stdioConn.writeEncoded), or nil when that
// cannot be told, so that every write is taken as one that may block.
//
// A regular file: a write never waits for a reader. A pipe: only when
// the write fits beside what is in it, which needs care. The capacity
// F_GETPIPE_SZ reports is a ring of page-sized slots, and a write does
// not fill the free part of a slot the reader has partly read, nor, when
// what it writes does not fit there whole, the rest of the last slot
// written (Linux fs/pipe.c, pipe_write): so capacity less the bytes
// unread (FIONREAD) overstates the room, as much as a page a slot. Each
// slot in use holds at least one unread byte, so at most min(slots,
// unread) are in use, and a write of n bytes needs at most n/page
// rounded up of the free ones (pipeRoom.fits). That bound is tight when the peer has
// read every reply, the usual case of one client waiting for each
// answer; a peer that lets replies pile up fails it, and its writes may
// then block as they always could.
//
// Anything else (a socket, a terminal, a character device, a writer that
// is not an *os.File) is taken as one whose writes may block.
func newOutRoom(out io.Writer) func(n int) bool {
	f, ok := out.(*os.File)
	if !ok {
		return nil
	}
	// Not f.Fd, which would put the file in blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	var size int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if serr = unix.Fstat(int(fd), &st); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
			size, serr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		}
	}); err != nil || serr != nil {
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return func(int) bool { return true }
	case unix.S_IFIFO:
		page := unix.Getpagesize()
		p := &pipeRoom{rc: rc, page: page, slots: size / page}
		p.control = p.unread // made once: no allocation a write
		return p.fits
	}
	return nil
}

// pipeRoom reads a pipe's unread bytes; callers serialise its use (the
// write lock).
type pipeRoom struct {
	rc      syscall.RawConn
	page    int
	slots   int
	control func(fd uintptr)
	n       int // unread bytes, set by control
	err     error
}

func (p *pipeRoom) unread(fd uintptr) {
	// TIOCINQ is Linux's FIONREAD, for a pipe as for a socket.
	p.n, p.err = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
}

// fits reports whether a write of n bytes fits in the free slots for
// certain (newOutRoom).
func (p *pipeRoom) fits(n int) bool {
	if err := p.rc.Control(p.control); err != nil || p.err != nil {
		return false
	}
	used := min(p.slots, p.n)
	return used+(n+p.page-1)/p.page <= p.slots
}
