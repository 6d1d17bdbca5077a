package devrun

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// TraceDir is the dump directory's subdirectory for captured turns; a
// dump keeps it and a store path under it is skipped.
const TraceDir = ".trace"

// DumpResult is what a Dump did.
type DumpResult struct {
	Written, Unchanged, Removed int
	// Notes are the files left alone and why (a store path that is not
	// safe on disk, a symbolic link in the way), one line each.
	Notes []string
}

// Dump reconciles dir with files (store path → content): a file whose
// content changed is rewritten atomically (a temporary file renamed over
// it), a file no longer in the store is removed, .trace/ is kept. dir is
// created owner-only if missing. Nothing is written through a symbolic
// link: dir itself being one is an error, one below it is skipped with a
// note. The error is a directory that cannot be used at all.
func Dump(dir string, files map[string]string) (DumpResult, error) {
	var res DumpResult
	if err := ownDir(dir); err != nil {
		return res, err
	}
	keep := map[string]bool{}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		target, note := safeTarget(dir, p)
		if note != "" {
			res.Notes = append(res.Notes, note)
			continue
		}
		keep[target] = true
		changed, err := writeIfChanged(target, files[p])
		switch {
		case err != nil:
			res.Notes = append(res.Notes, fmt.Sprintf("store file %s not written: %v", p, err))
		case changed:
			res.Written++
		default:
			res.Unchanged++
		}
	}
	removed, notes := removeStale(dir, keep)
	res.Removed, res.Notes = removed, append(res.Notes, notes...)
	return res, nil
}

// ownDir makes dir (owner-only) if missing and refuses a dir that is a
// symbolic link or not a directory.
func ownDir(dir string) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create the store directory: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("the store directory: %w", err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("the store directory %s is a symbolic link; nothing is written through one: remove it or choose another with --store-dir", dir)
	}
	if !info.IsDir() {
		return fmt.Errorf("the store directory %s is not a directory: remove it or choose another with --store-dir", dir)
	}
	return nil
}

// safeTarget is where store path p goes under dir, creating its parent
// directories; or a note saying why it is skipped.
func safeTarget(dir, p string) (string, string) {
	rel := filepath.FromSlash(p)
	first, _, _ := strings.Cut(p, "/")
	switch {
	case !filepath.IsLocal(rel):
		return "", fmt.Sprintf("store file %s skipped: its path is not a plain relative path on this system", p)
	case first == TraceDir:
		return "", fmt.Sprintf("store file %s skipped: %s/ holds the captured turns", p, TraceDir)
	}
	cur := dir
	parts := strings.Split(rel, string(filepath.Separator))
	for _, part := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o700); err != nil {
				return "", fmt.Sprintf("store file %s skipped: %v", p, err)
			}
			continue
		case err != nil:
			return "", fmt.Sprintf("store file %s skipped: %v", p, err)
		case info.Mode()&fs.ModeSymlink != 0:
			return "", fmt.Sprintf("store file %s skipped: %s is a symbolic link, and nothing is written through one", p, cur)
		case !info.IsDir():
			return "", fmt.Sprintf("store file %s skipped: %s is a file, not a directory", p, cur)
		}
	}
	target := filepath.Join(dir, rel)
	if info, err := os.Lstat(target); err == nil {
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			return "", fmt.Sprintf("store file %s skipped: %s is a symbolic link, and nothing is written through one", p, target)
		case !info.Mode().IsRegular():
			return "", fmt.Sprintf("store file %s skipped: %s is not a regular file", p, target)
		}
	}
	return target, ""
}

// writeIfChanged writes content to target atomically, owner-only, unless
// it holds content already.
func writeIfChanged(target, content string) (bool, error) {
	if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, []byte(content)) {
		return false, nil
	}
	return true, writeAtomic(target, []byte(content))
}

// writeAtomic writes data to a temporary file beside target and renames
// it over target, so a reader never sees half a file; the rename replaces
// a link rather than writing through it.
func writeAtomic(target string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(target), ".pf-tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(name, 0o600)); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, target); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

// removeStale removes the files under dir that are not in keep, except
// under .trace/, and then the directories left empty. A symbolic link is
// left alone, with a note: the dump did not make it.
func removeStale(dir string, keep map[string]bool) (int, []string) {
	removed := 0
	var notes, dirs []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return nil
		}
		if d.IsDir() {
			if path == filepath.Join(dir, TraceDir) {
				return filepath.SkipDir
			}
			dirs = append(dirs, path)
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			notes = append(notes, fmt.Sprintf("%s left alone: it is a symbolic link, which the store dump does not make or follow", path))
			return nil
		}
		if keep[path] {
			return nil
		}
		if err := os.Remove(path); err != nil {
			notes = append(notes, fmt.Sprintf("stale %s not removed: %v", path, err))
			return nil
		}
		removed++
		return nil
	})
	for _, d := range slices.Backward(dirs) {
		_ = os.Remove(d) // only succeeds when empty, which is what is wanted
	}
	return removed, notes
}
