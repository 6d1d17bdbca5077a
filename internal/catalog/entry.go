package catalog

import (
	"cmp"
	"crypto/sha256"
	"iter"
	"slices"

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
// name, description and health, in catalog order. Two catalogs with equal
// hashes rank identically, so the retrieval index can be carried forward.
type Hash [sha256.Size]byte

// A Catalog is the result of one successful resolution: its entries sorted
// by name, then healthy before broken, then by path. It is immutable, so
// any number of callers may read one concurrently.
type Catalog struct {
	entries []Entry
	// byNorm maps normalize(name) to the first entry of that spelling;
	// sameNorm chains each entry to the next one of the same spelling
	// (-1 ends the chain). A healthy name is already normalised, so this
	// one table serves both Lookup and Healthy.
	byNorm   map[string]int
	sameNorm []int
	broken   int
	hash     Hash
	// files holds what this resolution read and parsed, so the next reload
	// can skip unchanged files.
	files *fileCache
	// toolPatterns are the [catalog].tools globs; tools the healthy
	// entries they match, in catalog order.
	toolPatterns []string
	tools        []Entry
}

// newCatalog sorts entries and builds the lookup tables.
func newCatalog(es []*entry, files *fileCache) *Catalog {
	slices.SortStableFunc(es, func(a, b *entry) int {
		if c := cmp.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := boolOrder(a.kind != 0, b.kind != 0); c != 0 {
			return c
		}
		return comparePaths(a.path, b.path)
	})
	c := &Catalog{
		entries:  make([]Entry, len(es)),
		byNorm:   make(map[string]int, len(es)),
		sameNorm: make([]int, len(es)),
		files:    files,
	}
	last := make(map[string]int) // only spellings shared by two or more entries
	h := sha256.New()
	var lens [17]byte
	for i, e := range es {
		c.entries[i] = Entry{e}
		c.sameNorm[i] = -1
		n := normalize(e.name)
		if first, seen := c.byNorm[n]; !seen {
			c.byNorm[n] = i
		} else {
			prev, ok := last[n]
			if !ok {
				prev = first
			}
			c.sameNorm[prev] = i
			last[n] = i
		}
		if e.kind != 0 {
			c.broken++
		}
		// Lengths first, so ("ab","c") and ("a","bc") hash apart.
		putUint64(lens[0:8], uint64(len(e.name)))
		putUint64(lens[8:16], uint64(len(e.description)))
		lens[16] = 0
		if e.kind != 0 {
			lens[16] = 1
		}
		h.Write(lens[:])
		h.Write([]byte(e.name))
		h.Write([]byte(e.description))
	}
	h.Sum(c.hash[:0])
	return c
}

// spelledAs yields the positions of entries whose normalised name is n.
func (c *Catalog) spelledAs(n string) iter.Seq[int] {
	return func(yield func(int) bool) {
		i, ok := c.byNorm[n]
		if !ok {
			return
		}
		for ; i >= 0; i = c.sameNorm[i] {
			if !yield(i) {
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
	for i := range c.spelledAs(name) {
		if e := c.entries[i]; !e.Broken() && e.Name() == name {
			return e, true
		}
	}
	return Entry{}, false
}

// BrokenCount is the number of broken entries.
func (c *Catalog) BrokenCount() int { return c.broken }

// Hash identifies the catalog's names, descriptions and health (not the
// prompt bodies): an edit that only changes a body keeps it.
func (c *Catalog) Hash() Hash { return c.hash }
