package store

import "strings"

// tokenKind is one step of a compiled glob.
type tokenKind uint8

const (
	tokLiteral  tokenKind = iota // exactly one byte
	tokStar                      // *  : any run of bytes other than '/'
	tokAny                       // ** at the end: any run of bytes
	tokSegments                  // **/ : empty, or any run ending in '/'
)

type token struct {
	kind tokenKind
	b    byte
}

// pattern is a validated, compiled glob. Matching simulates all token
// positions at once (a bit set per path byte), so the cost is bounded by
// len(path) × len(tokens) whatever the pattern; there is no backtracking
// an adversarial pattern could blow up.
type pattern struct {
	toks []token
}

// compileGlob validates p by the prompt-language §4.3 glob rules and compiles
// it.
func compileGlob(p string) (pattern, error) {
	switch {
	case p == "":
		return pattern{}, errInvalidGlob(p, "the pattern is empty")
	case len(p) > MaxPathLen:
		return pattern{}, errInvalidGlob(p, "the pattern is longer than 1024 bytes")
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case isControl(c):
			return pattern{}, errInvalidGlob(p, "the pattern contains a control character")
		case c == '\\':
			return pattern{}, errInvalidGlob(p, "the pattern contains a backslash; every character but * is literal")
		}
	}
	if strings.Contains(p, "***") {
		return pattern{}, errInvalidGlob(p, "more than two consecutive *")
	}
	toks := make([]token, 0, len(p))
	rest := p
	for {
		seg, tail, more := strings.Cut(rest, "/")
		if seg == "**" {
			if more {
				toks = append(toks, token{kind: tokSegments})
			} else {
				toks = append(toks, token{kind: tokAny})
			}
		} else {
			if strings.Contains(seg, "**") {
				return pattern{}, errInvalidGlob(p, "** must be a whole path segment")
			}
			for i := 0; i < len(seg); i++ {
				if seg[i] == '*' {
					toks = append(toks, token{kind: tokStar})
				} else {
					toks = append(toks, token{kind: tokLiteral, b: seg[i]})
				}
			}
			if more {
				toks = append(toks, token{kind: tokLiteral, b: '/'})
			}
		}
		if !more {
			return pattern{toks: toks}, nil
		}
		rest = tail
	}
}

// matcher holds the two state sets reused across every path one Glob call
// tests, so matching allocates once per call rather than once per path.
type matcher struct {
	pat       pattern
	cur, next []uint64
}

func newMatcher(p pattern) *matcher {
	words := (len(p.toks) + 1 + 63) / 64
	return &matcher{pat: p, cur: make([]uint64, words), next: make([]uint64, words)}
}

func set(s []uint64, i int)      { s[i>>6] |= 1 << (i & 63) }
func has(s []uint64, i int) bool { return s[i>>6]&(1<<(i&63)) != 0 }

func isEmpty(s []uint64) bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// closure adds every state reachable without consuming a byte: the
// variable-width tokens may all match the empty string.
func (m *matcher) closure(s []uint64) {
	toks := m.pat.toks
	for i := 0; i < len(toks); i++ {
		if has(s, i) && toks[i].kind != tokLiteral {
			set(s, i+1)
		}
	}
}

func (m *matcher) match(path string) bool {
	toks := m.pat.toks
	end := len(toks)
	clear(m.cur)
	set(m.cur, 0)
	m.closure(m.cur)
	for j := 0; j < len(path); j++ {
		c := path[j]
		clear(m.next)
		for i := 0; i < end; i++ {
			if !has(m.cur, i) {
				continue
			}
			switch t := toks[i]; t.kind {
			case tokLiteral:
				if t.b == c {
					set(m.next, i+1)
				}
			case tokStar:
				if c != '/' {
					set(m.next, i)
				}
			case tokAny:
				set(m.next, i)
			case tokSegments:
				set(m.next, i)
				if c == '/' {
					set(m.next, i+1)
				}
			}
		}
		m.closure(m.next)
		if isEmpty(m.next) {
			return false
		}
		m.cur, m.next = m.next, m.cur
	}
	return has(m.cur, end)
}
