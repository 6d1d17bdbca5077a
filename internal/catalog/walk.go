package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
)

// pattern is one [catalog] glob prepared for doublestar.
type pattern struct {
	raw  string   // as configured, for messages
	glob string   // braces and backslashes escaped, "./" removed
	segs []string // glob split on '/', for pruning the walk
}

// compilePatterns compiles one setting's patterns. A bad pattern becomes a
// fault instead of stopping the pass, so one resolution reports every bad
// pattern at once.
func compilePatterns(setting string, raws []string, faults []Fault) ([]pattern, []Fault) {
	var out []pattern
	for _, raw := range raws {
		p, err := compilePattern(raw)
		if err != nil {
			faults = append(faults, Fault{Kind: KindPattern, Detail: setting + ` "` + raw + `": ` + err.Error()})
			continue
		}
		out = append(out, p)
	}
	return out, faults
}

// compilePattern prepares a configured glob. The reference's glob dialect
// has no {a,b} alternation, treats '\' as an ordinary character and reads
// '^' after '[' literally, so those are escaped before doublestar sees
// them; '*', '**', '?', '[...]' and '[!...]' keep their meaning.
func compilePattern(raw string) (pattern, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inClass:
			switch {
			case c == '\\':
				b.WriteString(`\\`)
			case c == '^' && raw[i-1] == '[':
				b.WriteString(`\^`)
			default:
				if c == ']' {
					inClass = false
				}
				b.WriteByte(c)
			}
		case c == '[':
			inClass = true
			b.WriteByte(c)
			if i+1 < len(raw) && raw[i+1] == '!' {
				b.WriteByte('!')
				i++
			}
		case c == '{', c == '}', c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	// The config loader already refuses these; checking again keeps a
	// pattern from reaching outside the root whoever filled Settings.
	glob := path.Clean(b.String())
	switch {
	case path.IsAbs(glob):
		return pattern{}, errors.New("must be relative to the prompts directory")
	case glob == ".." || strings.HasPrefix(glob, "../"):
		return pattern{}, errors.New("must not climb above the prompts directory with `..`")
	case !doublestar.ValidatePattern(glob):
		return pattern{}, errors.New("is not a valid glob")
	}
	return pattern{raw: raw, glob: glob, segs: strings.Split(glob, "/")}, nil
}

// match reports whether rel (slash-separated, relative to the root) matches.
func (p pattern) match(rel string) bool {
	return doublestar.MatchUnvalidated(p.glob, rel)
}

// mayContain reports whether some file below the directory dir (split into
// segments) could match, so the walk can skip directories no pattern
// reaches. It only says no when that is certain.
func (p pattern) mayContain(dir []string) bool {
	for i, d := range dir {
		if i >= len(p.segs) {
			return false
		}
		if p.segs[i] == "**" {
			return true
		}
		// The last segment names files, so the directory must sit above it.
		if i == len(p.segs)-1 {
			return false
		}
		if !doublestar.MatchUnvalidated(p.segs[i], d) {
			return false
		}
	}
	return true
}

// found is one regular file the walk kept: matched by an include pattern,
// confined to the root, not excluded.
type found struct {
	path      string // joined under the root as configured
	canonical string
	// info is the file's own stat (symlinks followed); when nil, dirent
	// is stat'ed on first use.
	info   fs.FileInfo
	dirent fs.DirEntry
}

// stat returns the file's FileInfo.
func (f found) stat() (fs.FileInfo, error) {
	if f.info != nil {
		return f.info, nil
	}
	return f.dirent.Info()
}

// walker expands the include patterns by walking the root once. Walking
// (rather than globbing root+pattern) keeps metacharacters in the root's
// own name literal, and lets confinement be decided per directory instead
// of canonicalising every file.
type walker struct {
	root      string
	rootCanon string
	include   []pattern
	exclude   []pattern
	emit      func(found) *globbedFile // receives kept files in path order
	faults    []Fault
	reported  map[string]bool // include patterns already given an I/O fault
	// links is set when the walk met a symbolic link: what a link reaches
	// can change without an event in the directories the watcher watches
	// for it, so such a tree is never patched (see patch).
	links bool
	// noFollow stops at links instead of following them (a patch, which
	// gives up on meeting one anyway).
	noFollow bool
}

// walk emits the kept files in path order (a depth-first walk over sorted
// directory listings visits paths component-wise sorted) and returns what
// it walked, nil when it walked nothing. rootErr is the failure to
// canonicalise the root, if any.
func (w *walker) walk(rootErr error) *dirNode {
	if len(w.include) == 0 {
		return nil // only [prompts.NAME] files contribute
	}
	if rootErr != nil {
		// A missing root resolves nothing, which the Empty check reports.
		if !errors.Is(rootErr, fs.ErrNotExist) && !errors.Is(rootErr, syscall.ENOTDIR) {
			w.ioFault(nil, rootErr)
		}
		return nil
	}
	return w.dir(nil, w.rootCanon, []string{w.rootCanon})
}

// dir walks one directory: segs is its path below the root, canon its
// canonical path, ancestors the canonical paths of the directories above
// it (itself included), which stops symlink loops.
func (w *walker) dir(segs []string, canon string, ancestors []string) *dirNode {
	relDir := strings.Join(segs, "/")
	full := filepath.Join(w.root, filepath.FromSlash(relDir))
	n := &dirNode{full: full, canon: canon, segs: segs}
	ents, err := os.ReadDir(full)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			w.ioFault(segs, err)
		}
		return n
	}
	relPrefix := ""
	if relDir != "" {
		relPrefix = relDir + "/"
	}
	const sep = string(filepath.Separator)
	for _, d := range ents {
		name := d.Name()
		switch t := d.Type(); {
		case t.IsDir():
			child := append(segs[:len(segs):len(segs)], name)
			if w.mayContain(child) {
				n.items = append(n.items, item{name: name, dir: w.dir(child, canon+sep+name, append(ancestors, canon+sep+name))})
			}
		case t.IsRegular():
			if !w.wanted(relPrefix + name) {
				continue
			}
			// Stat later, on the resolution's workers: on a large catalog
			// the per-file stat is most of a reload's cost.
			n.items = append(n.items, item{name: name, file: w.emit(found{path: full + sep + name, canonical: canon + sep + name, dirent: d})})
		case t&fs.ModeSymlink != 0:
			w.links = true
			if w.noFollow {
				continue
			}
			if it, ok := w.symlink(append(segs[:len(segs):len(segs)], name), full+sep+name, ancestors); ok {
				n.items = append(n.items, it)
			}
		}
	}
	return n
}

// symlink follows a link the way the reference's glob does, but only
// while it stays inside the root and never into its own ancestors.
func (w *walker) symlink(segs []string, full string, ancestors []string) (item, bool) {
	info, err := os.Stat(full)
	if err != nil {
		return item{}, false // dangling
	}
	target, err := filepath.EvalSymlinks(full)
	if err != nil || !within(w.rootCanon, target) {
		return item{}, false // everything behind it would be unconfined
	}
	name := segs[len(segs)-1]
	switch {
	case info.IsDir():
		for _, a := range ancestors {
			if a == target {
				return item{}, false
			}
		}
		if w.mayContain(segs) {
			return item{name: name, dir: w.dir(segs, target, append(ancestors, target))}, true
		}
	case info.Mode().IsRegular():
		if w.wanted(strings.Join(segs, "/")) {
			return item{name: name, file: w.emit(found{path: full, canonical: target, info: info})}, true
		}
	}
	return item{}, false
}

func (w *walker) mayContain(dir []string) bool {
	for _, p := range w.include {
		if p.mayContain(dir) {
			return true
		}
	}
	return false
}

// wanted: some include matches and no exclude does.
func (w *walker) wanted(rel string) bool {
	in := false
	for _, p := range w.include {
		if p.match(rel) {
			in = true
			break
		}
	}
	if !in {
		return false
	}
	for _, p := range w.exclude {
		if p.match(rel) {
			return false
		}
	}
	return true
}

// ioFault reports an unreadable directory against each include pattern
// that needed to look inside it.
func (w *walker) ioFault(segs []string, err error) {
	for _, p := range w.include {
		if w.reported[p.raw] || !p.mayContain(segs) {
			continue
		}
		if w.reported == nil {
			w.reported = make(map[string]bool)
		}
		w.reported[p.raw] = true
		w.faults = append(w.faults, Fault{Kind: KindPattern, Detail: `include "` + p.raw + `": ` + err.Error()})
	}
}

// within reports whether path is root or below it, component-wise.
func within(root, path string) bool {
	if path == root {
		return true
	}
	if !strings.HasPrefix(path, root) {
		return false
	}
	if strings.HasSuffix(root, string(filepath.Separator)) {
		return true
	}
	return path[len(root)] == filepath.Separator
}

// comparePaths orders paths component by component, so "a/b" sorts before
// "a-b" as it does in the reference.
func comparePaths(a, b string) int {
	for {
		ai := strings.IndexByte(a, filepath.Separator)
		bi := strings.IndexByte(b, filepath.Separator)
		ac, bc := a, b
		if ai >= 0 {
			ac = a[:ai]
		}
		if bi >= 0 {
			bc = b[:bi]
		}
		if c := strings.Compare(ac, bc); c != 0 {
			return c
		}
		switch {
		case ai < 0 && bi < 0:
			return 0
		case ai < 0:
			return -1
		case bi < 0:
			return 1
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}
