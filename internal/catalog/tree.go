package catalog

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// walkTree is what one resolution walked and read, kept with its catalog:
// a full reload takes the previous parse of each unchanged file from it,
// and a reload told which paths changed (patch) re-evaluates only those
// and shares every other directory and entry with it. It is immutable
// once its resolution returns.
type walkTree struct {
	settings   Settings
	include    []pattern
	exclude    []pattern
	rootCanons []string
	roots      []*dirNode            // one per root; nil where nothing was walked
	blocks     map[string]*fileState // [prompts.NAME] files, by path
	// patchable is false when a later reload must resolve in full
	// whatever it is told: the walk met a symbolic link, [prompts.NAME]
	// blocks take part, or two roots overlap (see patch).
	patchable bool
}

// dirNode is one directory the walk entered.
type dirNode struct {
	full  string   // joined under the root as configured
	canon string   // symlinks evaluated
	segs  []string // its path below the root
	items []item   // what the walk kept in it, by name
}

// item is one name in a directory: a subdirectory the walk entered, or a
// file an include pattern kept (its entry nil when it is not a prompt).
type item struct {
	name string
	dir  *dirNode
	file *globbedFile
}

// find is the position of name among n's items, or where it would go.
func (n *dirNode) find(name string) (int, bool) {
	return slices.BinarySearchFunc(n.items, name, func(it item, name string) int { return strings.Compare(it.name, name) })
}

// below splits path into the root it is under and its segments below
// that root's directory, in any spelling of the root the walk or the
// watcher uses. ok is false for a path under no walked root.
func (t *walkTree) below(path string) (root int, segs []string, ok bool) {
	root, rest, ok := t.rel(path)
	if ok && rest != "" {
		segs = strings.Split(rest, string(filepath.Separator))
	}
	return root, segs, ok
}

// rel is below's path relative to its root's directory ("" for the root).
func (t *walkTree) rel(path string) (root int, rest string, ok bool) {
	const sep = string(filepath.Separator)
	path = filepath.Clean(path)
	for i, n := range t.roots {
		if n == nil {
			continue
		}
		for _, dir := range [2]string{n.full, n.canon} {
			if path == dir {
				return i, "", true
			}
			if within(dir, path) {
				return i, strings.TrimPrefix(path[len(dir):], sep), true
			}
		}
	}
	return 0, "", false
}

// state is what this resolution knew about the file at path (joined under
// the root as the walk joins it), nil when it did not read it.
func (t *walkTree) state(path string) *fileState {
	if t == nil {
		return nil
	}
	if st, ok := t.blocks[path]; ok {
		return st
	}
	i, rest, ok := t.rel(path)
	if !ok || rest == "" {
		return nil
	}
	for n := t.roots[i]; ; {
		name, deeper, more := strings.Cut(rest, string(filepath.Separator))
		j, found := n.find(name)
		if !found {
			return nil
		}
		it := n.items[j]
		if !more {
			if it.file == nil {
				return nil
			}
			return it.file.state
		}
		if n = it.dir; n == nil {
			return nil
		}
		rest = deeper
	}
}

// sameSettings reports whether s resolves the way t's settings did, so t
// can be patched rather than walked again.
func (t *walkTree) sameSettings(s Settings) bool {
	a := t.settings
	return slices.Equal(a.Roots, s.Roots) && slices.Equal(a.Include, s.Include) && slices.Equal(a.Exclude, s.Exclude) &&
		slices.Equal(a.Tools, s.Tools) && maps.Equal(a.Blocks, s.Blocks)
}

// overlapping reports whether some root lies inside another (or is the
// same directory spelt twice), where one file is reached from two roots.
func overlapping(canons []string) bool {
	for i, a := range canons {
		if a == "" {
			return true
		}
		for _, b := range canons[i+1:] {
			if within(a, b) || within(b, a) {
				return true
			}
		}
	}
	return false
}
