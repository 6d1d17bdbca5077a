package prompt

import (
	"bytes"
	"sort"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// source is a prompt file normalised for parsing: BOM stripped and \r\n
// folded to \n, so every later step deals with one line ending. It keeps
// what it needs to map positions back to the original bytes.
type source struct {
	doc        []byte
	bomLen     int
	removedCRs []int // offsets in doc of the \n whose preceding \r was dropped
	lineStarts []int // offsets in doc where each line begins; lineStarts[0] == 0
}

func newSource(src []byte) *source {
	s := &source{}
	if bytes.HasPrefix(src, utf8BOM) {
		src = src[len(utf8BOM):]
		s.bomLen = len(utf8BOM)
	}
	if bytes.Contains(src, []byte("\r\n")) {
		doc := make([]byte, 0, len(src))
		for i := 0; i < len(src); i++ {
			if src[i] == '\r' && i+1 < len(src) && src[i+1] == '\n' {
				s.removedCRs = append(s.removedCRs, len(doc))
				continue
			}
			doc = append(doc, src[i])
		}
		src = doc
	}
	s.doc = src
	s.lineStarts = append(make([]int, 0, bytes.Count(src, []byte("\n"))+1), 0)
	for i, c := range src {
		if c == '\n' {
			s.lineStarts = append(s.lineStarts, i+1)
		}
	}
	return s
}

// line returns the 1-based file line holding doc offset off.
func (s *source) line(off int) int {
	return sort.Search(len(s.lineStarts), func(i int) bool { return s.lineStarts[i] > off })
}

// lineStart returns the offset where the line holding off begins.
func (s *source) lineStart(off int) int {
	return s.lineStarts[s.line(off)-1]
}

// lineEnd returns the offset just past the line holding off, including its
// newline (or len(doc) on the last line).
func (s *source) lineEnd(off int) int {
	l := s.line(off)
	if l < len(s.lineStarts) {
		return s.lineStarts[l]
	}
	return len(s.doc)
}

// lineText returns the line holding off without its line ending (a stray
// \r that was not part of a \r\n pair included).
func (s *source) lineText(off int) string {
	start, end := s.lineStart(off), s.lineEnd(off)
	if end > start && s.doc[end-1] == '\n' {
		end--
	}
	if end > start && s.doc[end-1] == '\r' {
		end--
	}
	return string(s.doc[start:end])
}

// original maps a doc offset back to a byte offset in the caller's file.
func (s *source) original(off int) int {
	return s.bomLen + off + sort.SearchInts(s.removedCRs, off+1)
}

func (s *source) span(start, end int) Span {
	return Span{Start: s.original(start), End: s.original(end)}
}
