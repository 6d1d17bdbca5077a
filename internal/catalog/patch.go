package catalog

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"weak"
)

// changeSet is what the watcher saw change since the catalog since was
// resolved: the paths its events named, in any spelling under a root.
type changeSet struct {
	since *Catalog
	paths []string
}

// patch is a reload told which paths changed since prev was resolved. It
// re-evaluates only those paths against prev's walk tree (a file is read
// again, a new directory walked, a vanished one dropped), shares every
// other directory, file state and entry with prev, and splices the
// changed entries into prev's catalog, so its cost follows the change,
// not the catalog.
//
// ok is false whenever the result might differ from a full resolution,
// and the caller then resolves in full (which also words any fault): the
// settings changed, a root moved, the tree is not patchable (symbolic
// links, [prompts.NAME] blocks, overlapping roots), a directory could not
// be read, or the change makes a duplicate name or an empty catalog.
func patch(ctx context.Context, s Settings, prev *Catalog, paths []string) (c *Catalog, ok bool) {
	t := prev.tree
	if t == nil || !t.patchable || !t.sameSettings(s) {
		return nil, false
	}
	for i, root := range s.Roots {
		if canon, err := filepath.EvalSymlinks(root); err != nil || canon != t.rootCanons[i] {
			return nil, false
		}
	}
	p := &patcher{
		ctx:   ctx,
		r:     &resolver{s: s, prev: t, now: time.Now(), rootCanons: t.rootCanons},
		t:     t,
		fresh: make(map[*dirNode]bool),
	}
	next := *t
	next.roots = slices.Clone(t.roots)
	// Each path once, spelt under its root as the walk spells it, parents
	// before children, so a directory walked afresh here makes the events
	// inside it redundant.
	type at struct {
		root int
		segs []string
	}
	var fulls []string
	where := make(map[string]at)
	for _, path := range paths {
		root, segs, under := t.below(path)
		if !under || next.roots[root] == nil {
			continue // not ours (prompts.toml), or a root nothing is globbed under
		}
		if len(segs) == 0 {
			return nil, false // the root itself was replaced or removed
		}
		full := filepath.Join(next.roots[root].full, filepath.Join(segs...))
		if _, dup := where[full]; !dup {
			where[full] = at{root, segs}
			fulls = append(fulls, full)
		}
	}
	slices.SortFunc(fulls, comparePaths)
	var walked []string
	for _, full := range fulls {
		if slices.ContainsFunc(walked, func(w string) bool { return within(w, full) }) {
			continue
		}
		a := where[full]
		next.roots[a.root] = p.apply(next.roots[a.root], a.segs, a.root)
		if p.giveUp {
			return nil, false
		}
		walked = append(walked, p.walked...)
		p.walked = p.walked[:0]
	}
	if ctx.Err() != nil {
		return nil, false // the full resolution reports the context's end
	}
	return prev.spliced(p.removed, p.added, &next)
}

// patcher is one patch's working state.
type patcher struct {
	ctx     context.Context
	r       *resolver
	t       *walkTree
	fresh   map[*dirNode]bool // copies made by this patch, safe to change
	removed []*entry          // entries of files that left or changed
	added   []*entry          // entries read by this patch
	walked  []string          // directories walked afresh by the last apply
	giveUp  bool
}

// own returns n itself if this patch made it, else a copy it may change.
func (p *patcher) own(n *dirNode) *dirNode {
	if p.fresh[n] {
		return n
	}
	m := &dirNode{full: n.full, canon: n.canon, segs: n.segs, items: slices.Clone(n.items)}
	p.fresh[m] = true
	return m
}

// apply re-evaluates the path segs below n (root is n's root) and
// returns n, or the copy of n that holds the result.
func (p *patcher) apply(n *dirNode, segs []string, root int) *dirNode {
	name := segs[0]
	k, found := n.find(name)
	if len(segs) > 1 {
		if !found || n.items[k].dir == nil {
			// The walk did not enter it: no pattern reaches below it, or
			// it did not exist, and then its creation is itself a change
			// of n that walks it.
			return n
		}
		child := p.apply(n.items[k].dir, segs[1:], root)
		if child == n.items[k].dir {
			return n
		}
		m := p.own(n)
		m.items[k].dir = child
		return m
	}
	it, keep := p.evaluate(n, name, root)
	if p.giveUp {
		return n
	}
	if !found && !keep {
		return n
	}
	m := p.own(n)
	switch {
	case found && keep:
		p.drop(m.items[k])
		m.items[k] = it
	case found:
		p.drop(m.items[k])
		m.items = slices.Delete(m.items, k, k+1)
	default:
		m.items = slices.Insert(m.items, k, it)
	}
	return m
}

// evaluate is what a full walk would keep under name in n now, as the
// walker decides it (walker.dir), without following links.
func (p *patcher) evaluate(n *dirNode, name string, root int) (item, bool) {
	const sep = string(filepath.Separator)
	segs := append(slices.Clone(n.segs), name)
	full := n.full + sep + name
	canon := n.canon + sep + name
	w := &walker{root: p.r.s.Roots[root], rootCanon: p.t.rootCanons[root], include: p.t.include, exclude: p.t.exclude, noFollow: true}
	info, err := os.Lstat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return item{}, false
	case err != nil, info.Mode()&fs.ModeSymlink != 0:
		p.giveUp = true // unreadable, or a link: the full walk words and follows these
		return item{}, false
	case info.IsDir():
		if !w.mayContain(segs) {
			return item{}, false
		}
		var node *dirNode
		files, err := p.r.expand(p.ctx, w, func() { node = w.dir(segs, canon, nil) })
		if err != nil || w.links || len(w.faults) > 0 {
			p.giveUp = true
			return item{}, false
		}
		markFresh(p.fresh, node)
		for _, f := range files {
			if f.entry != nil {
				p.added = append(p.added, f.entry)
			}
		}
		p.walked = append(p.walked, full)
		return item{name: name, dir: node}, true
	case info.Mode().IsRegular():
		if !w.wanted(strings.Join(segs, "/")) {
			return item{}, false
		}
		g := &globbedFile{found: found{path: full, canonical: canon}}
		g.entry, g.state = p.r.globbed(found{path: full, canonical: canon, info: info})
		if g.entry != nil {
			p.added = append(p.added, g.entry)
		}
		return item{name: name, file: g}, true
	}
	return item{}, false // neither file, directory nor link: the walk skips it too
}

// drop records the entries an item held as removed.
func (p *patcher) drop(it item) {
	if it.file != nil && it.file.entry != nil {
		p.removed = append(p.removed, it.file.entry)
	}
	if it.dir != nil {
		for _, sub := range it.dir.items {
			p.drop(sub)
		}
	}
}

func markFresh(fresh map[*dirNode]bool, n *dirNode) {
	fresh[n] = true
	for _, it := range n.items {
		if it.dir != nil {
			markFresh(fresh, it.dir)
		}
	}
}

// spliced is c with removed (entries as their files made them) taken out
// and added put in, marked, counted and ordered exactly as a full
// resolution of the same files would do it; ok is false when the result
// would not resolve (a duplicate name, nothing left), which a full
// resolution then reports.
func (c *Catalog) spliced(removed, added []*entry, tree *walkTree) (*Catalog, bool) {
	drops := make(map[int]bool, len(removed)) // positions in c.entries
	for _, x := range removed {
		i, ok := c.position(x)
		if !ok {
			return nil, false
		}
		drops[i] = true
	}
	// keptHealthy: c's healthy prompt named n stays.
	keptHealthy := func(n string) bool {
		from, to := c.named(n)
		return from < to && !c.entries[from].Broken() && !drops[from]
	}
	addedHealthy := make(map[string]int)
	for _, a := range added {
		if a.kind == 0 {
			addedHealthy[a.name]++
			if addedHealthy[a.name] > 1 || keptHealthy(a.name) {
				return nil, false // a duplicate: the full resolution names both files
			}
		}
	}
	healthyAfter := func(n string) bool { return addedHealthy[n] > 0 || keptHealthy(n) }

	// A healthy name that came or went may mark or unmark a broken
	// placeholder elsewhere (markShadowing).
	var adds []*entry
	for _, a := range added {
		if a.kind != 0 && healthyAfter(normalize(a.name)) {
			a = a.marked()
		}
		adds = append(adds, a)
	}
	touched := make(map[string]bool)
	for _, x := range removed {
		if x.kind == 0 {
			touched[x.name] = true
		}
	}
	for n := range addedHealthy {
		touched[n] = true
	}
	for n := range touched {
		for _, spelling := range []string{n, n + brokenSuffix} {
			for e := range c.spelledAs(spelling) {
				orig := e.e.orig()
				if !e.Broken() || normalize(orig.name) != n {
					continue
				}
				i, _ := c.position(orig)
				if drops[i] {
					continue
				}
				if want := healthyAfter(n); want != (e.e.unmarked != nil) {
					drops[i] = true
					if want {
						adds = append(adds, orig.marked())
					} else {
						adds = append(adds, orig)
					}
				}
			}
		}
	}
	size := len(c.entries) - len(drops) + len(adds)
	if size == 0 {
		return nil, false // nothing to serve: the full resolution says why
	}
	slices.SortStableFunc(adds, compareEntries)
	bounds := make([]int, 0, len(drops)+1)
	for d := range drops {
		bounds = append(bounds, d)
	}
	slices.Sort(bounds)
	bounds = append(bounds, len(c.entries))

	out := &Catalog{entries: make([]Entry, 0, size), tree: tree, broken: c.broken, sum: c.sum, toolPatterns: c.toolPatterns,
		patchedFrom: weak.Make(c)}
	// Merge the kept runs of c with adds, both in catalog order.
	j, from := 0, 0
	for _, d := range bounds {
		run := c.entries[from:d]
		for len(run) > 0 && j < len(adds) {
			k, _ := slices.BinarySearchFunc(run, adds[j], func(e Entry, a *entry) int {
				if compareEntries(e.e, a) <= 0 {
					return -1
				}
				return 1
			})
			if k == len(run) {
				break // it goes after this run, perhaps after the next ones too
			}
			out.entries = append(out.entries, run[:k]...)
			out.entries = append(out.entries, Entry{adds[j]})
			run = run[k:]
			j++
		}
		out.entries = append(out.entries, run...)
		from = d + 1
	}
	for ; j < len(adds); j++ {
		out.entries = append(out.entries, Entry{adds[j]})
	}

	gone := make(map[*entry]bool, len(drops))
	for _, d := range bounds[:len(bounds)-1] {
		gone[c.entries[d].e] = true
		out.count(c.entries[d].e, -1)
		out.dropped = append(out.dropped, c.entries[d])
	}
	for _, a := range adds {
		out.count(a, 1)
		out.added = append(out.added, Entry{a})
	}
	out.digest()
	out.odd = slices.DeleteFunc(slices.Clone(c.odd), func(e Entry) bool { return gone[e.e] })
	for _, a := range adds {
		if normalize(a.name) != a.name {
			out.odd = append(out.odd, Entry{a})
		}
	}
	slices.SortStableFunc(out.odd, func(a, b Entry) int { return compareEntries(a.e, b.e) })
	if len(c.toolPatterns) > 0 {
		out.tools = slices.DeleteFunc(slices.Clone(c.tools), func(e Entry) bool { return gone[e.e] })
		for _, a := range adds {
			if isTool(a, c.toolPatterns) {
				out.tools = append(out.tools, Entry{a})
			}
		}
		slices.SortFunc(out.tools, func(a, b Entry) int { return strings.Compare(a.Name(), b.Name()) })
	}
	return out, true
}

// position finds the entry x (as its file made it, possibly published
// marked) in c.
func (c *Catalog) position(x *entry) (int, bool) {
	for _, name := range []string{x.name, x.name + brokenSuffix} {
		from, to := c.named(name)
		for i := from; i < to; i++ {
			if c.entries[i].e == x || c.entries[i].e.unmarked == x {
				return i, true
			}
		}
	}
	return 0, false
}
