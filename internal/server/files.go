package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// maxInputFileBytes caps what input_file may place in a run's store: a
// store lives in memory for the whole run, and a caller must not be able
// to make the server read an arbitrarily large file into it.
const maxInputFileBytes = 16 << 20

// fileRoots are the directories input_file and output_file must resolve
// inside ([paths].files, design §3.4), absolute and cleaned as configured.
// Symlinks are evaluated per call, so a root that is itself a link, or
// that appears after boot, is judged as it is when the call arrives.
type fileRoots []string

// fileAccess is what a caller's paths are checked against: the roots, and
// the server's own files, which no root makes reachable. The default root
// is the working directory, which usually holds prompts.toml, its env file
// (the gateway key) and the prompts directory: a caller must not read the
// secrets, nor rewrite the prompts the watcher publishes to every caller.
type fileAccess struct {
	roots fileRoots
	// secret are files never read nor written (prompts.toml, prompts.env).
	secret []string
	// published are directories never written into ([paths].prompts, each).
	published []string
}

// refusedError is a path inside a root that names one of the server's own
// files. Its text is what the caller reads.
type refusedError struct {
	key, path, why string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s %s was refused: %s; name another file", e.key, strconv.Quote(e.path), e.why)
}

func (e *refusedError) refusal() {}

// check confines p to a root and refuses the server's own files: for
// input_file the configuration and its env file, for output_file those and
// anything inside the prompts directory.
func (a fileAccess) check(key, p string, write bool) (confinedPath, error) {
	pl, err := a.roots.confine(key, p)
	if err != nil {
		return pl, err
	}
	real := filepath.Join(pl.dir, pl.rel)
	for _, f := range a.secret {
		if f != "" && evalExisting(f) == real {
			return confinedPath{}, &refusedError{key, p, msgConfiguration}
		}
	}
	if write {
		for _, d := range a.published {
			if d == "" {
				continue
			}
			if _, ok := under(evalExisting(d), real); ok {
				return confinedPath{}, &refusedError{key, p, fmt.Sprintf("it is inside the prompts directory (%s), which callers may not write", d)}
			}
		}
	}
	// Paths alone miss a hard link: judge the file itself too. The opened
	// handle is judged again (identity.judge in read and write), since the
	// file may be linked or swapped after this check.
	pl.identity = identity{secret: a.secret, write: write}
	if info, err := os.Stat(real); err == nil {
		if err := pl.identity.judge(info); err != nil {
			return confinedPath{}, &refusedError{key, p, err.Error()}
		}
	}
	return pl, nil
}

const (
	msgConfiguration = "it is this server's configuration, which callers may not read or write"
	msgLinked        = "it has more than one hard link, so writing it would also change a file under another name (perhaps a prompt or the configuration), which callers may not do"
)

// identity judges a file by what it is rather than by the path that named
// it: a hard link to prompts.toml inside a file root has a path of its own
// but is the same file, and writing through it rewrites the configuration.
type identity struct {
	// secret are the files never read nor written, by path: each is
	// stat'ed when judged, so a configuration replaced since boot is still
	// recognised.
	secret []string
	// write forbids, besides, a file with other hard links: the published
	// prompts directories are too many files to compare one by one, and a
	// second name for a file is never needed to receive an output.
	write bool
}

// judge returns why the file described by info may not be used, or nil.
func (id identity) judge(info fs.FileInfo) error {
	for _, f := range id.secret {
		if f == "" {
			continue
		}
		if s, err := os.Stat(f); err == nil && os.SameFile(s, info) {
			return errors.New(msgConfiguration)
		}
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && id.write && info.Mode().IsRegular() && st.Nlink > 1 {
		return errors.New(msgLinked)
	}
	return nil
}

// callerError turns a filesystem error into what a caller reads: without
// the os.Root operation names (statat, openat) and with an escaping link
// said in plain words.
func (pl confinedPath) callerError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if err != nil && err.Error() == "path escapes from parent" {
		return fmt.Errorf("it resolves outside the directory %s it must stay in", pl.dir)
	}
	return err
}

// confinedPath is a caller's path confined to one root: the file is opened
// as rel under an os.Root at dir, which refuses to follow any link out of
// dir even if the tree changes after the check.
type confinedPath struct {
	caller   string // as the caller spelt it, for messages
	dir      string // the root, symlinks evaluated
	rel      string
	identity identity // what the opened file must not be
}

// outsideError is a path that does not resolve inside any root. Its text
// is what the caller reads: the path and the directories that are allowed.
type outsideError struct {
	key, path string
	roots     fileRoots
}

func (e *outsideError) refusal() {}

func (e *outsideError) Error() string {
	if len(e.roots) == 0 {
		return fmt.Sprintf("%s %s was refused: this server reads and writes no files, because [paths].files in its prompts.toml lists no directory; pass the text with input_text, or omit output_file to receive the output in the reply", e.key, strconv.Quote(e.path))
	}
	return fmt.Sprintf("%s %s resolves outside the directories this server may read and write (%s); name a file inside one of them", e.key, strconv.Quote(e.path), strings.Join(e.roots, ", "))
}

// confine resolves p (relative paths against the working directory) with
// every symlink along its existing prefix evaluated, and finds the root it
// lies in. key names the argument in the error.
func (r fileRoots) confine(key, p string) (confinedPath, error) {
	outside := &outsideError{key: key, path: p, roots: r}
	if p == "" || strings.ContainsRune(p, 0) {
		return confinedPath{}, outside
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return confinedPath{}, outside
	}
	real := evalExisting(abs)
	for _, root := range r {
		dir := evalExisting(root)
		if rel, ok := under(dir, real); ok {
			return confinedPath{caller: p, dir: dir, rel: rel}, nil
		}
	}
	return confinedPath{}, outside
}

// evalExisting evaluates the symlinks of the longest prefix of abs that
// exists and appends the rest lexically: a file that does not exist yet
// (an output_file) is judged by the directory it would be created in. A
// dangling link is followed to where it points, so it is judged by the
// file it would create, not by where the link itself sits.
func evalExisting(abs string) string {
	return evalExistingHops(abs, maxLinkHops)
}

// maxLinkHops bounds how many dangling links are followed, as the kernel
// bounds a lookup (ELOOP), so a cycle of links cannot loop forever.
const maxLinkHops = 40

func evalExistingHops(abs string, hops int) string {
	rest := ""
	cur := abs
	for {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			if rest == "" {
				return real
			}
			return filepath.Join(real, rest)
		}
		if target, err := os.Readlink(cur); err == nil && hops > 0 {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(cur), target)
			}
			return evalExistingHops(filepath.Join(target, rest), hops-1)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		if rest == "" {
			rest = filepath.Base(cur)
		} else {
			rest = filepath.Join(filepath.Base(cur), rest)
		}
		cur = parent
	}
}

// under reports whether path is dir or inside it, and the path relative
// to dir ("." for dir itself).
func under(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// read returns the file's text: a regular UTF-8 file of at most
// maxInputFileBytes.
func (pl confinedPath) read() (string, error) {
	text, err := pl.readRaw()
	if err != nil {
		return "", pl.callerError(err)
	}
	return text, nil
}

func (pl confinedPath) readRaw() (string, error) {
	root, err := os.OpenRoot(pl.dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	// Stat before opening: opening a FIFO or a device would block or
	// stream forever, and only regular files are inputs.
	if info, err := root.Stat(pl.rel); err != nil {
		return "", err
	} else if !info.Mode().IsRegular() {
		return "", errors.New("it is not a regular file")
	}
	f, err := root.Open(pl.rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// Judge the handle, not the path: it is what will be read, whatever
	// was linked or renamed since the check.
	if info, err := f.Stat(); err != nil {
		return "", err
	} else if !info.Mode().IsRegular() {
		return "", errors.New("it is not a regular file")
	} else if err := pl.identity.judge(info); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxInputFileBytes+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxInputFileBytes {
		return "", fmt.Errorf("it is larger than the %d-byte input limit", maxInputFileBytes)
	}
	if !utf8.Valid(data) {
		return "", errors.New("it is not UTF-8 text")
	}
	return string(data), nil
}

// write creates or replaces the file with content. The directory it goes
// in must exist: the server does not create directories for callers. An
// existing target must be a regular file, and the open does not block:
// opening a FIFO for writing would otherwise wait for a reader forever,
// where no cancellation can reach it.
func (pl confinedPath) write(content string) error {
	if err := pl.writeRaw(content); err != nil {
		return pl.callerError(err)
	}
	return nil
}

func (pl confinedPath) writeRaw(content string) error {
	root, err := os.OpenRoot(pl.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if info, err := root.Stat(pl.rel); err == nil && info.IsDir() {
		return errors.New("it is a directory")
	} else if err == nil && !info.Mode().IsRegular() {
		return errors.New("it exists and is not a regular file")
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := root.OpenFile(pl.rel, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	// The target may have been swapped or linked since the check; judge
	// what was opened before truncating it. That is why the open has no
	// O_TRUNC: it would empty the configuration before it could be
	// recognised.
	if info, err := f.Stat(); err != nil {
		f.Close()
		return err
	} else if !info.Mode().IsRegular() {
		f.Close()
		return errors.New("it exists and is not a regular file")
	} else if err := pl.identity.judge(info); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
