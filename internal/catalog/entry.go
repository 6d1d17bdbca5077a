package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"iter"
	"slices"
	"strings"
	"weak"

	"github.com/promptforge-go/promptforge/internal/prompt"
)

// entry is the immutable record behind an Entry.
type entry struct {
	name        string
	description string
	path        string // as joined under the root, for messages
	canonical   string // symlinks evaluated; "" when that failed
	source      string
	prompt      *prompt.Prompt
	kind        Kind // zero for a healthy entry
	problem     string
	// unmarked is the entry as its file made it when this one is that
	// entry renamed by markShadowing; nil otherwise.
	unmarked *entry
	// digest is the entry's share of its catalog's Hash, set by seal
	// before the entry is first published and never changed after.
	digest [sha256.Size]byte
}

// marked is a copy of e renamed because a healthy prompt answers to its
// placeholder (see markShadowing).
func (e *entry) marked() *entry {
	m := *e
	m.name += brokenSuffix
	m.unmarked = e
	m.seal()
	return &m
}

// orig is the entry as its file made it.
func (e *entry) orig() *entry {
	if e.unmarked != nil {
		return e.unmarked
	}
	return e
}

// seal computes the entry's digest: its name, description and health,
// lengths first so ("ab","c") and ("a","bc") hash apart.
func (e *entry) seal() {
	var buf [256]byte // most entries fit: no allocation
	b := buf[:17]
	putUint64(b[0:8], uint64(len(e.name)))
	putUint64(b[8:16], uint64(len(e.description)))
	if e.kind != 0 {
		b[16] = 1
	}
	b = append(append(b, e.name...), e.description...)
	e.digest = sha256.Sum256(b)
}

// compareEntries is catalog order: by name, then healthy before broken,
// then by path.
func compareEntries(a, b *entry) int {
	if c := cmp.Compare(a.name, b.name); c != 0 {
		return c
	}
	if c := boolOrder(a.kind != 0, b.kind != 0); c != 0 {
		return c
	}
	return comparePaths(a.path, b.path)
}

// An Entry is one prompt in a Catalog: healthy (it can run) or broken (it
// is listed with the problem that stops it). Entries are immutable, and an
// Entry value is one pointer, so copying it is free. The zero Entry is not
// a prompt: IsZero reports it.
type Entry struct {
	e *entry
}

// IsZero reports whether e is the zero Entry (no prompt).
func (e Entry) IsZero() bool { return e.e == nil }

// Name is the prompt's frontmatter name for a healthy entry; for a broken
// one it is a placeholder (the file stem or block key, suffixed with
// " (broken)" when it would read as another name).
func (e Entry) Name() string { return e.e.name }

// Description is the frontmatter description; "" for a broken entry.
func (e Entry) Description() string { return e.e.description }

// Path is the file the entry came from, joined under the prompts root.
func (e Entry) Path() string { return e.e.path }

// Broken reports whether the entry cannot run.
func (e Entry) Broken() bool { return e.e.kind != 0 }

// Kind says why a broken entry is broken; zero for a healthy one.
func (e Entry) Kind() Kind { return e.e.kind }

// Problem is what stops a broken entry from running; "" when healthy.
func (e Entry) Problem() string { return e.e.problem }

// Source is the exact text a healthy entry was parsed from; "" when broken.
func (e Entry) Source() string { return e.e.source }

// Prompt is the parsed prompt of a healthy entry, nil when broken. It is
// shared and read-only, like the rest of the entry.
func (e Entry) Prompt() *prompt.Prompt { return e.e.prompt }

// Hash identifies a catalog's ranking-relevant content: every entry's
// name, description and health. Two catalogs with equal hashes rank
// identically, so the retrieval index can be carried forward. It is a
// digest of the sum of the entries' own digests, so a reload that changes
// one entry updates it without hashing the others again; a published
// catalog's order is fixed by those same fields (names of healthy prompts
// are unique, broken ones have no description), so the order adds nothing.
type Hash [sha256.Size]byte

// A Catalog is the result of one successful resolution: its entries sorted
// by name, then healthy before broken, then by path. It is immutable, so
// any number of callers may read one concurrently.
type Catalog struct {
	entries []Entry
	// odd are the entries whose name normalize changes (only broken
	// placeholders can have one), in catalog order. Every other entry is
	// found under its normalised spelling by a binary search of entries,
	// so no table needs rebuilding when a reload changes one entry.
	odd    []Entry
	broken int
	// sum is the lane-wise sum of the entries' digests; hash digests it.
	sum  [4]uint64
	hash Hash
	// tree holds what this resolution walked, read and parsed, so the
	// next reload can skip unchanged files, or patch only what changed.
	tree *walkTree
	// patchedFrom is the catalog this one was patched from, weakly, so a
	// reader following generations (the server's MCP prompts) can take
	// only the change without keeping every older catalog alive; added
	// and dropped are that change (see Changes).
	patchedFrom    weak.Pointer[Catalog]
	added, dropped []Entry
	// toolPatterns are the [catalog].tools globs; tools the healthy
	// entries they match, in catalog order.
	toolPatterns []string
	tools        []Entry
}

// newCatalog sorts entries, which are sealed, and counts them.
func newCatalog(es []*entry, tree *walkTree) *Catalog {
	slices.SortStableFunc(es, compareEntries)
	c := &Catalog{entries: make([]Entry, len(es)), tree: tree}
	for i, e := range es {
		c.entries[i] = Entry{e}
		c.count(e, 1)
		if normalize(e.name) != e.name {
			c.odd = append(c.odd, Entry{e})
		}
	}
	c.digest()
	return c
}

// count adds (sign 1) or removes (sign -1) e from the broken count and
// the digest sum.
func (c *Catalog) count(e *entry, sign int) {
	if e.kind != 0 {
		c.broken += sign
	}
	for k := range c.sum {
		v := binary.LittleEndian.Uint64(e.digest[8*k:])
		if sign > 0 {
			c.sum[k] += v
		} else {
			c.sum[k] -= v
		}
	}
}

// digest sets the hash from the sum and the entry count.
func (c *Catalog) digest() {
	var b [40]byte
	for k, v := range c.sum {
		putUint64(b[8*k:], v)
	}
	putUint64(b[32:], uint64(len(c.entries)))
	c.hash = sha256.Sum256(b[:])
}

// named is the range of entries whose name is exactly name.
func (c *Catalog) named(name string) (from, to int) {
	from, _ = slices.BinarySearchFunc(c.entries, name, func(e Entry, n string) int { return strings.Compare(e.e.name, n) })
	to = from
	for to < len(c.entries) && c.entries[to].e.name == name {
		to++
	}
	return from, to
}

// spelledAs yields, in catalog order, the entries whose normalised name
// is n (itself normalised): those named n exactly, then merged among them
// the odd ones that normalise to n.
func (c *Catalog) spelledAs(n string) iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		from, to := c.named(n)
		var odd []Entry
		for _, e := range c.odd {
			if normalize(e.e.name) == n {
				odd = append(odd, e)
			}
		}
		for i := from; i < to || len(odd) > 0; {
			var e Entry
			if i < to && (len(odd) == 0 || compareEntries(c.entries[i].e, odd[0].e) < 0) {
				e = c.entries[i]
				i++
			} else {
				e, odd = odd[0], odd[1:]
			}
			if !yield(e) {
				return
			}
		}
	}
}

// boolOrder puts false (healthy) before true (broken).
func boolOrder(a, b bool) int {
	if a == b {
		return 0
	}
	if !a {
		return -1
	}
	return 1
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// Changes is how c differs from prev when a reload patched c from prev:
// the entries c has that prev had not (new, changed, or renamed by a
// " (broken)" mark), and the entries of prev that c has not. Every other
// entry of c is the very Entry prev holds. ok is false when c was not
// patched from prev (it was resolved in full, or from another catalog):
// the caller then compares the catalogs whole. The slices are shared and
// must not be modified.
func (c *Catalog) Changes(prev *Catalog) (added, dropped []Entry, ok bool) {
	if prev == nil || c.patchedFrom.Value() != prev {
		return nil, nil, false
	}
	return c.added, c.dropped, true
}

// Len is the number of entries, healthy and broken.
func (c *Catalog) Len() int { return len(c.entries) }

// At returns the i-th entry in catalog order.
func (c *Catalog) At(i int) Entry { return c.entries[i] }

// All yields every entry in catalog order without copying the catalog.
func (c *Catalog) All() iter.Seq2[int, Entry] {
	return func(yield func(int, Entry) bool) {
		for i, e := range c.entries {
			if !yield(i, e) {
				return
			}
		}
	}
}

// Page returns at most limit entries starting at offset (fewer at the end,
// none past it). The slice is the caller's.
func (c *Catalog) Page(offset, limit int) []Entry {
	if offset < 0 || offset >= len(c.entries) || limit <= 0 {
		return nil
	}
	end := min(len(c.entries), offset+limit)
	return slices.Clone(c.entries[offset:end])
}

// Healthy returns the healthy entry with exactly this name.
func (c *Catalog) Healthy(name string) (Entry, bool) {
	// Healthy sorts before broken among entries of one name.
	if from, to := c.named(name); from < to && !c.entries[from].Broken() {
		return c.entries[from], true
	}
	return Entry{}, false
}

// BrokenCount is the number of broken entries.
func (c *Catalog) BrokenCount() int { return c.broken }

// Hash identifies the catalog's names, descriptions and health (not the
// prompt bodies): an edit that only changes a body keeps it.
func (c *Catalog) Hash() Hash { return c.hash }
