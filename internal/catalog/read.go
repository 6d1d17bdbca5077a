package catalog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/prompt"
)

// MaxPromptBytes caps one prompt file (2 MiB). A file of exactly the cap
// is read; one byte more is refused.
const MaxPromptBytes = 2 << 20

// supportedMajor is the promptforge: version this runtime executes.
const supportedMajor = 1

// racyWindow is how close to the moment we read a file its modification
// time may be before we stop trusting (size, mtime) to prove it unchanged:
// a second write within one timestamp tick keeps the mtime, and some
// filesystems tick every two seconds.
const racyWindow = 2 * time.Second

// content is everything derived from one file's bytes. It is shared by
// every generation that saw the same bytes, so a reload parses only what
// changed. It is analysed once, on first need, by whichever resolution
// needs it first.
type content struct {
	source string

	once       sync.Once
	parsed     *prompt.Prompt
	parseErr   error
	version    uint64
	hasVersion bool
	malformed  bool // looks like a prompt whose frontmatter does not parse
}

func newContent(src []byte) *content {
	return &content{source: string(src)}
}

// analyse parses the file and reads its promptforge: version. Parsing
// first spares the second YAML decode a separate version probe would
// cost on every real prompt; the lenient probe only runs when the parse
// fails, to tell a broken prompt from markdown that is not a prompt.
func (c *content) analyse() *content {
	c.once.Do(func() {
		src := []byte(c.source)
		c.parsed, c.parseErr = prompt.Parse(src)
		if c.parseErr == nil {
			c.version, c.hasVersion = c.parsed.Frontmatter.Version, c.parsed.Frontmatter.HasVersion
		} else {
			c.version, c.hasVersion = prompt.Version(src)
		}
		if !c.hasVersion {
			c.malformed = malformedCandidate(c.source)
		}
	})
	return c
}

// malformedCandidate reports whether a file without a readable
// promptforge: version still looks like an attempt at a prompt: it opens
// a --- frontmatter and some line of it starts with "promptforge".
func malformedCandidate(src string) bool {
	src = strings.TrimPrefix(src, "\uFEFF")
	first, rest, _ := strings.Cut(src, "\n")
	if strings.TrimSpace(first) != "---" {
		return false
	}
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if strings.TrimSpace(line) == "---" {
			return false
		}
		if strings.HasPrefix(strings.TrimLeft(line, " \t\r\v\f"), "promptforge") {
			return true
		}
	}
	return false
}

// fileState is what one resolution knew about one file.
type fileState struct {
	size    int64
	modTime time.Time
	readAt  time.Time // when the resolution that read it started
	c       *content
}

// readProblem is why a file could not be read: it becomes a broken
// Unreadable entry.
type readProblem string

// readFile returns the file's state, reusing prev's parse when the file
// is provably unchanged. info may be nil (the file is then stat'ed here).
func readFile(path string, info fs.FileInfo, prev *walkTree, now time.Time) (*fileState, readProblem) {
	if info == nil {
		var err error
		if info, err = os.Stat(path); err != nil {
			return nil, unreadable(err)
		}
	}
	if info.Size() > MaxPromptBytes {
		return nil, readProblem(fmt.Sprintf("is %d bytes, over the %d-byte prompt limit", info.Size(), MaxPromptBytes))
	}
	old := prev.state(path)
	if old != nil && old.size == info.Size() && old.modTime.Equal(info.ModTime()) &&
		info.ModTime().Before(old.readAt.Add(-racyWindow)) {
		return old, ""
	}
	// O_NONBLOCK, which a regular file ignores, spares os.Open's four
	// fcntl calls per file (Go sets a file non-blocking for its poller,
	// then, as epoll refuses a regular file, back again): on a
	// 10,000-prompt catalog they were a sixth of the boot's CPU. A FIFO
	// (a [prompts.NAME] file, or one that replaced a listed file) no
	// longer blocks the open: without a writer it reads as empty, but a
	// writer that holds it open and writes nothing still holds the read
	// (in the poller, not on a thread).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		// Another open holds a write lease on the file (Samba's kernel
		// oplocks, an NFS server's delegation): a non-blocking open is
		// refused where os.Open waits for the holder to let go (fcntl(2),
		// F_SETLEASE; TestReadFileWaitsForAWriteLease).
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, unreadable(err)
	}
	defer f.Close()
	src, err := readCapped(f, info.Size())
	if err != nil {
		return nil, unreadable(err)
	}
	if len(src) > MaxPromptBytes {
		return nil, readProblem(fmt.Sprintf("is over the %d-byte prompt limit", MaxPromptBytes))
	}
	if !utf8.Valid(src) {
		return nil, "unreadable: the file is not valid UTF-8 text"
	}
	st := &fileState{size: info.Size(), modTime: info.ModTime(), readAt: now}
	if old != nil && old.c.source == string(src) {
		st.c = old.c
	} else {
		st.c = newContent(src)
	}
	return st, ""
}

// readCapped reads at most MaxPromptBytes+1 bytes. It sizes its buffer
// from the stat so the usual file takes a single read: a read of a regular
// file that comes back short has reached the end.
func readCapped(f io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, min(size, MaxPromptBytes)+1)
	n, err := f.Read(buf)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if n < len(buf) {
		return buf[:n], nil
	}
	// The file grew since the stat: read on, up to one byte past the cap.
	rest, err := io.ReadAll(io.LimitReader(f, MaxPromptBytes+1-int64(n)))
	if err != nil {
		return nil, err
	}
	return append(buf[:n], rest...), nil
}

// unreadable renders an I/O failure without the path, which the fault's
// locus already names.
func unreadable(err error) readProblem {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return readProblem("unreadable: " + err.Error())
}
