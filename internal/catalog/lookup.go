package catalog

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrNotFound: no entry answers to the requested name.
var ErrNotFound = errors.New("no prompt answers to that name")

// ErrAmbiguous: more than one healthy entry answers to the requested name.
// A resolved catalog never has two healthy prompts of one name, so this is
// an internal failure, not a caller's mistake.
var ErrAmbiguous = errors.New("the name matches more than one prompt")

// LookupError is a failed Lookup. Its message is the text a caller is
// shown: for ErrNotFound it lists the catalog nearest-first so a model can
// correct its spelling, but nothing is ever run on a near miss.
type LookupError struct {
	Requested string
	Err       error // ErrNotFound or ErrAmbiguous
	closest   string
}

func (e *LookupError) Error() string {
	if errors.Is(e.Err, ErrAmbiguous) {
		return `the prompt name "` + quotedName(e.Requested) + `" matched more than one enabled prompt`
	}
	return `there is no prompt named "` + quotedName(e.Requested) + `", so nothing was run. ` + e.closest
}

// Bounds on a requested name's cost: no prompt name is longer than 48
// bytes, so comparing more than compareRunes runes cannot change which
// names are closest in any useful way, and echoing more than echoBytes
// bytes back only helps a caller who sends megabytes of name.
const (
	compareRunes = 128
	echoBytes    = 200
)

// quotedName is name as the reply quotes it: as spelt, cut at echoBytes
// (on a rune boundary) with an ellipsis.
func quotedName(name string) string {
	if len(name) <= echoBytes {
		return name
	}
	cut := echoBytes
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// firstRunes is at most the first n runes of s.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

func (e *LookupError) Unwrap() error { return e.Err }

// normalize folds the spellings a caller may use for one name: '-' becomes
// '_' and ASCII letters are lowercased; anything else is kept.
func normalize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '-' || ('A' <= c && c <= 'Z') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case c == '-':
			b[i] = '_'
		case 'A' <= c && c <= 'Z':
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// Lookup finds the entry a caller means by name, leniently (case and
// '-'/'_' folded) but never fuzzily. A single healthy match wins over any
// broken ones, so a broken file can never shadow a working prompt. With no
// healthy match, the first broken match (in catalog order) is returned, so
// the caller learns its problem.
func (c *Catalog) Lookup(name string) (Entry, error) {
	var healthy, broken []Entry
	for e := range c.spelledAs(normalize(name)) {
		if e.Broken() {
			broken = append(broken, e)
		} else {
			healthy = append(healthy, e)
		}
	}
	switch {
	case len(healthy) == 1:
		return healthy[0], nil
	case len(healthy) > 1:
		return Entry{}, &LookupError{Requested: name, Err: ErrAmbiguous}
	case len(broken) > 0:
		return broken[0], nil
	}
	return Entry{}, &LookupError{Requested: name, Err: ErrNotFound, closest: c.ClosestFirst(name)}
}

// ClosestFirst renders every entry name, nearest to name first (edit
// distance over normalised spellings, ties by name):
// "Enabled prompts, closest first: a, b, c." or "No prompts are enabled.".
func (c *Catalog) ClosestFirst(name string) string {
	if len(c.entries) == 0 {
		return "No prompts are enabled."
	}
	want := []rune(normalize(firstRunes(name, compareRunes)))
	type ranked struct {
		name string
		dist int
	}
	rs := make([]ranked, len(c.entries))
	for i, e := range c.entries {
		rs[i] = ranked{e.Name(), levenshtein([]rune(normalize(e.Name())), want)}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if d := cmp.Compare(a.dist, b.dist); d != 0 {
			return d
		}
		return cmp.Compare(a.name, b.name)
	})
	var b strings.Builder
	b.WriteString("Enabled prompts, closest first: ")
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.name)
	}
	b.WriteByte('.')
	return b.String()
}

// levenshtein is the unit-cost edit distance between a and b.
func levenshtein(a, b []rune) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			up := row[j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			row[j] = min(row[j]+1, row[j-1]+1, diag+cost)
			diag = up
		}
	}
	return row[len(b)]
}
