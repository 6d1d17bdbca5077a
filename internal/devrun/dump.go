package devrun

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
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
// it), a file an earlier dump wrote that is no longer in the store is
// removed, .trace/ is kept. What a dump wrote is recorded in dir's
// manifestName file, and only files it lists are ever removed: a directory
// that also holds files of its own (a --store-dir slip such as ".") loses
// none of them. dir is
// created owner-only if missing. Nothing is written through a symbolic
// link: dir itself being one is an error, one below it is skipped with a
// note. The error is a directory that cannot be used at all.
func Dump(dir string, files map[string]string) (DumpResult, error) {
	var res DumpResult
	dir = filepath.Clean(dir)
	if err := ownDir(dir); err != nil {
		return res, err
	}
	wrote := readManifest(dir)
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
	removed, notes := removeStale(dir, keep, wrote)
	res.Removed, res.Notes = removed, append(res.Notes, notes...)
	if err := writeManifest(dir, keep, wrote); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the record of the dumped files (%s) not written, so the next dump removes none of them: %v", manifestName, err))
	}
	return res, nil
}

// manifestName is the file in the dump directory listing the files the
// dumps wrote there (their paths under it, one a line): what a later dump
// may remove. Store paths hold no control bytes (store.ValidatePath), so
// a line is a path.
const manifestName = ".promptforge-dump"

// readManifest returns the files dir's manifest lists, as paths joined to
// dir; an entry that is not a plain relative path is ignored.
func readManifest(dir string) map[string]bool {
	wrote := map[string]bool{}
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return wrote
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rel := filepath.FromSlash(line); line != "" && filepath.IsLocal(rel) {
			wrote[filepath.Join(dir, rel)] = true
		}
	}
	return wrote
}

// writeManifest records what dir now holds from the dumps: the files kept
// and those earlier dumps wrote that are still there (a removal failed).
func writeManifest(dir string, keep, wrote map[string]bool) error {
	var lines []string
	for path := range keep {
		wrote[path] = true
	}
	for path := range wrote {
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		if rel, err := filepath.Rel(dir, path); err == nil {
			lines = append(lines, filepath.ToSlash(rel)+"\n")
		}
	}
	slices.Sort(lines)
	return writeAtomic(filepath.Join(dir, manifestName), []byte(strings.Join(lines, "")))
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
	case p == manifestName:
		return "", fmt.Sprintf("store file %s skipped: the dump records what it wrote in that file", p)
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

// removeStale removes the files under dir that an earlier dump wrote and
// are not in keep, except under .trace/, and then the directories they
// leave empty. A symbolic link is left alone, with a note: the dump did
// not make it. Files no dump wrote are not touched.
func removeStale(dir string, keep, wrote map[string]bool) (int, []string) {
	removed := 0
	var notes []string
	dirs := map[string]bool{}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return nil
		}
		if d.IsDir() {
			if path == filepath.Join(dir, TraceDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			notes = append(notes, fmt.Sprintf("%s left alone: it is a symbolic link, which the store dump does not make or follow", path))
			return nil
		}
		if keep[path] || !wrote[path] {
			return nil
		}
		if err := os.Remove(path); err != nil {
			notes = append(notes, fmt.Sprintf("stale %s not removed: %v", path, err))
			return nil
		}
		removed++
		for d := filepath.Dir(path); len(d) > len(dir); d = filepath.Dir(d) {
			dirs[d] = true
		}
		return nil
	})
	// Deepest first; os.Remove only succeeds on an empty directory, which
	// is what is wanted.
	ordered := slices.Collect(maps.Keys(dirs))
	slices.SortFunc(ordered, func(a, b string) int { return len(b) - len(a) })
	for _, d := range ordered {
		_ = os.Remove(d)
	}
	return removed, notes
}
