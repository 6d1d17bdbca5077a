package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/promptforge-go/promptforge/internal/names"
	"github.com/promptforge-go/promptforge/internal/prompt"
)

// Resolve turns settings and the files they reach into a Catalog. Every
// step runs to completion before the pass fails, so the *Error it returns
// carries every fault at once. In Reject mode any broken prompt is a
// fault; in Retain mode it is listed with its problem and only
// catalog-level faults (pattern, stale override, duplicate, empty) fail.
func Resolve(ctx context.Context, s Settings, mode Mode) (*Catalog, error) {
	return resolve(ctx, s, mode, nil)
}

// resolver holds one pass's working state.
type resolver struct {
	s          Settings
	prev       *walkTree
	now        time.Time
	rootCanons []string // each root with symlinks evaluated; "" when it cannot be
}

func resolve(ctx context.Context, s Settings, mode Mode, prev *walkTree) (*Catalog, error) {
	r := &resolver{s: s, prev: prev, now: time.Now(), rootCanons: make([]string, len(s.Roots))}
	var faults []Fault

	for _, t := range s.Tools {
		if _, err := path.Match(t, ""); err != nil {
			faults = append(faults, Fault{Kind: KindPattern, Detail: `tools "` + t + `": ` + err.Error() + "; use *, ? and [...] over prompt names"})
		}
	}
	include, faults := compilePatterns("include", s.Include, faults)
	exclude, faults := compilePatterns("exclude", s.Exclude, faults)
	var files []*globbedFile
	var missing []string
	seen := make(map[string]bool)
	tree := &walkTree{settings: cloneSettings(s), include: include, exclude: exclude, rootCanons: r.rootCanons,
		roots: make([]*dirNode, len(s.Roots)), blocks: make(map[string]*fileState, len(s.Blocks))}
	links := false
	for i, root := range s.Roots {
		w := &walker{root: root, include: include, exclude: exclude}
		canon, rootErr := filepath.EvalSymlinks(root)
		r.rootCanons[i], w.rootCanon = canon, canon
		if rootErr != nil && (errors.Is(rootErr, fs.ErrNotExist) || errors.Is(rootErr, syscall.ENOTDIR)) {
			missing = append(missing, root)
		}
		walked, err := r.expand(ctx, w, func() { tree.roots[i] = w.walk(rootErr) })
		if err != nil {
			return nil, err
		}
		links = links || w.links
		for _, f := range walked {
			// Overlapping roots (one inside another, or two spellings of
			// one directory) reach some files twice: one file is one
			// prompt, not a conflict with itself.
			if len(s.Roots) > 1 && seen[f.canonical] {
				continue
			}
			seen[f.canonical] = true
			files = append(files, f)
		}
		faults = append(faults, w.faults...)
	}
	patternFaults := len(faults)

	var kept []*entry
	for _, f := range files {
		if f.entry != nil {
			kept = append(kept, f.entry)
		}
	}

	kept, blockFaults := r.applyBlocks(kept, tree.blocks)
	faults = append(faults, blockFaults...)

	if mode != Retain {
		for _, e := range kept {
			if e.kind != 0 {
				faults = append(faults, Fault{Kind: e.kind, Prompt: e.name, Path: e.path, Detail: e.problem})
			}
		}
	}
	faults = append(faults, duplicates(kept)...)
	// The usual cause of a missing directory: a relative [paths].prompts
	// read from somewhere the author did not expect.
	const whereRelative = "relative paths in [paths].prompts are read from the config file's directory"
	if len(kept) == 0 {
		detail := "no prompts resolved; check [catalog].include and [prompts.*]"
		for _, root := range missing {
			detail += fmt.Sprintf("; the prompts directory %q does not exist (%s)", root, whereRelative)
		}
		faults = append(faults, Fault{Kind: KindEmpty, Detail: detail})
	} else {
		// The other directories resolved, but a listed one that is not
		// there is a mistake (or an unmounted share) to fix, not to
		// serve around silently.
		var gone []Fault
		for _, root := range missing {
			gone = append(gone, Fault{Kind: KindPattern, Detail: fmt.Sprintf(
				"the prompts directory %q does not exist (%s); create it or remove it from [paths].prompts", root, whereRelative)})
		}
		faults = slices.Insert(faults, patternFaults, gone...)
	}
	if len(faults) > 0 {
		return nil, &Error{Faults: faults}
	}
	markShadowing(kept)
	tree.patchable = !links && len(s.Blocks) == 0 && !overlapping(r.rootCanons)
	c := newCatalog(kept, tree)
	c.publishTools(s.Tools)
	return c, nil
}

// cloneSettings copies s, so the tree keeps what it was resolved with
// whatever the caller does with its slices and map.
func cloneSettings(s Settings) Settings {
	return Settings{Roots: slices.Clone(s.Roots), Include: slices.Clone(s.Include), Exclude: slices.Clone(s.Exclude),
		Tools: slices.Clone(s.Tools), Blocks: maps.Clone(s.Blocks)}
}

// globbedFile is one walked file and what became of it. A nil entry is a
// markdown file that is not a prompt (or one that vanished).
type globbedFile struct {
	found
	entry *entry
	state *fileState
}

// expand runs walk (a walk by w) and, while it goes on, reads, probes and
// parses what it finds on all cores. Files come back in walk order. Work
// is handed over in batches: per-file hand-offs cost more than a stat.
func (r *resolver) expand(ctx context.Context, w *walker, walk func()) ([]*globbedFile, error) {
	const batchSize = 64
	var files []*globbedFile
	work := make(chan []*globbedFile, 16)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for batch := range work {
				for _, f := range batch {
					if ctx.Err() == nil {
						f.entry, f.state = r.globbed(f.found)
					}
					// The walk tree keeps f: only the stat needed these.
					f.info, f.dirent = nil, nil
				}
			}
		})
	}
	var batch []*globbedFile
	w.emit = func(f found) *globbedFile {
		g := &globbedFile{found: f}
		files = append(files, g)
		batch = append(batch, g)
		if len(batch) == batchSize {
			work <- batch
			batch = nil
		}
		return g
	}
	walk()
	if len(batch) > 0 {
		work <- batch
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("resolve the prompt catalog: %w", err)
	}
	return files, nil
}

// globbed classifies one file an include pattern found; the entry is
// sealed.
func (r *resolver) globbed(f found) (*entry, *fileState) {
	e, st := r.classify(f)
	if e != nil {
		e.seal()
	}
	return e, st
}

func (r *resolver) classify(f found) (*entry, *fileState) {
	stem := placeholder(fileStem(f.path))
	broken := func(k Kind, problem string) *entry {
		return &entry{name: stem, path: f.path, canonical: f.canonical, kind: k, problem: problem}
	}
	info, err := f.stat()
	if err != nil {
		return nil, nil // removed since the directory was listed
	}
	st, problem := readFile(f.path, info, r.prev, r.now)
	if problem != "" {
		return broken(KindUnreadable, string(problem)), nil
	}
	c := st.c.analyse()
	if !c.hasVersion {
		if c.malformed {
			return broken(KindUnparsable, "declares a promptforge frontmatter that does not parse"), st
		}
		return nil, st // not a prompt: the only silent skip
	}
	if c.version != supportedMajor {
		return broken(KindUnparsable, unsupported(c.version)), st
	}
	if c.parseErr != nil {
		return broken(KindUnparsable, "does not parse: "+c.parseErr.Error()), st
	}
	return admit(c.parsed, c.source, f.path, f.canonical, fileStem(f.path), ""), st
}

func unsupported(v uint64) string {
	return fmt.Sprintf("unsupported promptforge version: %d (this build supports major %d)", v, supportedMajor)
}

// admit applies the naming rules to a parsed prompt. placeholderName names
// the entry if it is broken; blockKey is set when a [prompts.NAME] block
// reached the file.
func admit(p *prompt.Prompt, src, path, canonical, placeholderName, blockKey string) *entry {
	name := p.Frontmatter.Name
	if blockKey != "" {
		placeholderName = blockKey
	}
	broken := func(problem string) *entry {
		return &entry{name: placeholder(placeholderName), path: path, canonical: canonical, kind: KindInvalidName, problem: problem}
	}
	switch {
	case !names.ValidName(name):
		return broken(`tool name "` + name + `" is not ^[a-z][a-z0-9_]{0,47}$`)
	case names.IsReserved(name):
		return broken(`prompt name "` + name + `" is reserved: a built-in already answers to it, so "run ` + name + `" is ambiguous`)
	case blockKey != "" && name != blockKey:
		return broken(`frontmatter name "` + name + `" does not match its [prompts.` + blockKey + `] block`)
	}
	return &entry{
		name:        name,
		description: p.Frontmatter.Description,
		path:        path,
		canonical:   canonical,
		source:      src,
		prompt:      p,
	}
}

// applyBlocks applies the [prompts.NAME] tables in key order: a block with
// a file adds that prompt (replacing a globbed entry for the same file), a
// block without one must name an entry, and enabled = false removes the
// entries of that name at the end.
func (r *resolver) applyBlocks(entries []*entry, states map[string]*fileState) ([]*entry, []Fault) {
	keys := make([]string, 0, len(r.s.Blocks))
	for k := range r.s.Blocks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var faults []Fault
	disabled := make(map[string]bool)
	for _, key := range keys {
		b := r.s.Blocks[key]
		if !b.Enabled {
			disabled[key] = true
		}
		if b.File == "" {
			if !slices.ContainsFunc(entries, func(e *entry) bool { return e.name == key }) {
				faults = append(faults, Fault{Kind: KindStaleOverride, Prompt: key,
					Detail: "[prompts] block matches no prompt; it names no file and no glob found it"})
			}
			continue
		}
		if !b.Enabled {
			continue // the file is not even read
		}
		e, conflict := r.blockFile(key, b.File, states)
		if conflict != nil {
			faults = append(faults, *conflict)
			continue
		}
		e.seal()
		if i := slices.IndexFunc(entries, func(o *entry) bool { return sameFile(o, e) }); i >= 0 {
			entries[i] = e
		} else {
			entries = append(entries, e)
		}
	}
	if len(disabled) > 0 {
		entries = slices.DeleteFunc(entries, func(e *entry) bool { return disabled[e.name] })
	}
	return entries, faults
}

// blockFile reads the file a [prompts.NAME] block names. Unlike a globbed
// file it is a prompt by declaration, so a missing promptforge: version is
// a problem rather than a reason to skip it. With several roots the file
// is looked for under each; a file under two of them is a conflict.
func (r *resolver) blockFile(key, file string, states map[string]*fileState) (*entry, *Fault) {
	path, rootCanon, problem, conflict := r.locate(key, file)
	if conflict != nil {
		return nil, conflict
	}
	canonical, canonErr := filepath.EvalSymlinks(path)
	if canonErr != nil {
		canonical = ""
	}
	broken := func(k Kind, problem string) *entry {
		return &entry{name: placeholder(key), path: path, canonical: canonical, kind: k, problem: problem}
	}
	if problem != "" {
		return broken(KindUnreadable, problem), nil
	}
	st, readProblem := readFile(path, nil, r.prev, r.now)
	if readProblem != "" {
		return broken(KindUnreadable, string(readProblem)), nil
	}
	states[path] = st
	if canonErr != nil || rootCanon == "" || !within(rootCanon, canonical) {
		return broken(KindUnreadable, "resolves outside the prompts directory"), nil
	}
	c := st.c.analyse()
	if c.hasVersion && c.version != supportedMajor {
		return broken(KindUnparsable, unsupported(c.version)), nil
	}
	if c.parseErr != nil {
		return broken(KindUnparsable, "does not parse: "+c.parseErr.Error()), nil
	}
	if !c.hasVersion {
		return broken(KindUnparsable, "not a promptforge prompt: its frontmatter declares no promptforge: version"), nil
	}
	return admit(c.parsed, c.source, path, canonical, key, key), nil
}

// locate finds the root a block's file is under. One root: that root,
// as always. Several: the one root where the file exists; where none has
// it, a problem naming every root looked in; where two or more have it, a
// Duplicate fault naming each file.
func (r *resolver) locate(key, file string) (path, rootCanon, problem string, conflict *Fault) {
	rel := filepath.FromSlash(file)
	if len(r.s.Roots) == 1 {
		return filepath.Join(r.s.Roots[0], rel), r.rootCanons[0], "", nil
	}
	var found []int
	for i, root := range r.s.Roots {
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			found = append(found, i)
		}
	}
	switch len(found) {
	case 0:
		return filepath.Join(r.s.Roots[0], rel), r.rootCanons[0],
			fmt.Sprintf("%s is in none of the prompts directories: looked in %s", file, strings.Join(r.s.Roots, ", ")), nil
	case 1:
		return filepath.Join(r.s.Roots[found[0]], rel), r.rootCanons[found[0]], "", nil
	}
	paths := make([]string, len(found))
	for i, n := range found {
		paths[i] = filepath.Join(r.s.Roots[n], rel)
	}
	return "", "", "", &Fault{Kind: KindDuplicate, Prompt: key, Detail: fmt.Sprintf(
		"[prompts.%s].file %q is in %d prompts directories: %s; keep one of them, or rename the others", key, file, len(paths), strings.Join(paths, ", "))}
}

// sameFile compares by canonical path, or lexically when either side
// could not be canonicalised.
func sameFile(a, b *entry) bool {
	if a.canonical != "" && b.canonical != "" {
		return a.canonical == b.canonical
	}
	return filepath.Clean(a.path) == filepath.Clean(b.path)
}

// duplicates reports every name two or more healthy entries declare.
// Broken entries never take part: their names are placeholders.
func duplicates(entries []*entry) []Fault {
	seen := make(map[string]bool, len(entries))
	var dups []string
	for _, e := range entries {
		if e.kind != 0 {
			continue
		}
		if again, ok := seen[e.name]; !ok {
			seen[e.name] = false
		} else if !again {
			seen[e.name] = true
			dups = append(dups, e.name)
		}
	}
	if len(dups) == 0 {
		return nil
	}
	// Report in order of each name's first declaration.
	slices.SortFunc(dups, func(a, b string) int {
		return cmp.Compare(firstIndex(entries, a), firstIndex(entries, b))
	})
	var faults []Fault
	for _, name := range dups {
		var paths []string
		for _, e := range entries {
			if e.kind == 0 && e.name == name {
				paths = append(paths, e.path)
			}
		}
		faults = append(faults, Fault{Kind: KindDuplicate, Prompt: name,
			Detail: fmt.Sprintf("declared by %d prompts: %s", len(paths), strings.Join(paths, ", "))})
	}
	return faults
}

func firstIndex(entries []*entry, name string) int {
	return slices.IndexFunc(entries, func(e *entry) bool { return e.kind == 0 && e.name == name })
}

// markShadowing renames every broken placeholder that a caller's spelling
// of a healthy prompt would also reach, so listings never show one name
// twice and no broken file stands in front of a working prompt. The
// renamed entry is a copy: the walk tree keeps the entry as its file made
// it, so a patch can mark it again against the next catalog's names.
func markShadowing(entries []*entry) {
	if !slices.ContainsFunc(entries, func(e *entry) bool { return e.kind != 0 }) {
		return
	}
	healthy := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.kind == 0 {
			healthy[normalize(e.name)] = true
		}
	}
	for i, e := range entries {
		if e.kind != 0 && healthy[normalize(e.name)] {
			entries[i] = e.marked()
		}
	}
}
