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
	"unicode/utf8"
)

// maxInputFileBytes caps what input_file may place in a run's store: a
// store lives in memory for the whole run, and a caller must not be able
// to make the server read an arbitrarily large file into it.
const maxInputFileBytes = 16 << 20

// fileRoots are the directories input_file and output_file must resolve
// inside ([paths].files, DESIGN §3.4), absolute and cleaned as configured.
// Symlinks are evaluated per call, so a root that is itself a link, or
// that appears after boot, is judged as it is when the call arrives.
type fileRoots []string

// place is a caller's path confined to one root: the file is opened as rel
// under an os.Root at dir, which refuses to follow any link out of dir even
// if the tree changes after the check.
type place struct {
	caller string // as the caller spelt it, for messages
	dir    string // the root, symlinks evaluated
	rel    string
}

// outsideError is a path that does not resolve inside any root. Its text
// is what the caller reads: the path and the directories that are allowed.
type outsideError struct {
	key, path string
	roots     fileRoots
}

func (e *outsideError) Error() string {
	if len(e.roots) == 0 {
		return fmt.Sprintf("%s %s was refused: this server reads and writes no files, because [paths].files in its prompts.toml lists no directory; pass the text with input_text, or omit output_file to receive the output in the reply", e.key, strconv.Quote(e.path))
	}
	return fmt.Sprintf("%s %s resolves outside the directories this server may read and write (%s); name a file inside one of them", e.key, strconv.Quote(e.path), strings.Join(e.roots, ", "))
}

// confine resolves p (relative paths against the working directory) with
// every symlink along its existing prefix evaluated, and finds the root it
// lies in. key names the argument in the error.
func (r fileRoots) confine(key, p string) (place, error) {
	outside := &outsideError{key: key, path: p, roots: r}
	if p == "" || strings.ContainsRune(p, 0) {
		return place{}, outside
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return place{}, outside
	}
	real := evalExisting(abs)
	for _, root := range r {
		dir := evalExisting(root)
		if rel, ok := under(dir, real); ok {
			return place{caller: p, dir: dir, rel: rel}, nil
		}
	}
	return place{}, outside
}

// evalExisting evaluates the symlinks of the longest prefix of abs that
// exists and appends the rest lexically: a file that does not exist yet
// (an output_file) is judged by the directory it would be created in.
func evalExisting(abs string) string {
	rest := ""
	cur := abs
	for {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			if rest == "" {
				return real
			}
			return filepath.Join(real, rest)
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
func (pl place) read() (string, error) {
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
// in must exist: the server does not create directories for callers.
func (pl place) write(content string) error {
	root, err := os.OpenRoot(pl.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if info, err := root.Stat(pl.rel); err == nil && info.IsDir() {
		return fmt.Errorf("%s is a directory", pl.caller)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return root.WriteFile(pl.rel, []byte(content), 0o644)
}
