package store

import (
	"strconv"
	"strings"
)

// Lines are split on "\n" and "\r\n"; a final newline ends the last line
// rather than starting an empty one, so "a\n" and "a" both have one line.

// lineScanner yields the byte span of each line, terminator excluded.
type lineScanner struct {
	s   string
	pos int
}

func (l *lineScanner) next() (start, end int, ok bool) {
	if l.pos >= len(l.s) {
		return 0, 0, false
	}
	start = l.pos
	i := strings.IndexByte(l.s[start:], '\n')
	if i < 0 {
		l.pos = len(l.s)
		return start, len(l.s), true
	}
	end = start + i
	l.pos = end + 1
	if end > start && l.s[end-1] == '\r' {
		end--
	}
	return start, end, true
}

func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// sliceLines returns lines start..end (end clamped to the last line, or
// the last line when !hasEnd) joined by "\n". Bounds are already valid.
func sliceLines(s string, start, end int, hasEnd bool) string {
	sc := lineScanner{s: s}
	first, last := -1, -1
	for n := 1; ; n++ {
		if hasEnd && n > end {
			break
		}
		b, e, ok := sc.next()
		if !ok {
			break
		}
		if n == start {
			first = b
		}
		if n >= start {
			last = e
		}
	}
	if first < 0 {
		return ""
	}
	span := s[first:last]
	if !strings.Contains(span, "\r\n") {
		// Common case: the lines are contiguous in s, so no copy.
		return span
	}
	return strings.ReplaceAll(span, "\r\n", "\n")
}

// numberLines renders lines start..end prefixed by their absolute number,
// right-aligned to the widest number emitted.
func numberLines(s string, start, end int, hasEnd bool) string {
	last := lineCount(s)
	if hasEnd && end < last {
		last = end
	}
	if start > last {
		return ""
	}
	width := len(strconv.Itoa(last))
	var b strings.Builder
	b.Grow(len(s) + (last-start+1)*(width+3))
	sc := lineScanner{s: s}
	var num [20]byte
	for n := 1; n <= last; n++ {
		from, to, _ := sc.next()
		if n < start {
			continue
		}
		if n > start {
			b.WriteByte('\n')
		}
		digits := strconv.AppendInt(num[:0], int64(n), 10)
		for pad := width - len(digits); pad > 0; pad-- {
			b.WriteByte(' ')
		}
		b.Write(digits)
		b.WriteString("| ")
		b.WriteString(s[from:to])
	}
	return b.String()
}
