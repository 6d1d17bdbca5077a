package prompt

import (
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// mdHeading is one top-level heading of the body. Offsets are in the
// normalised document.
type mdHeading struct {
	level int
	text  string
	start int // start of the heading's first line
	end   int // start of the line after the heading (underline included)
	line  int
}

// mdFence is a top-level fenced code block whose opening line starts at
// column 0; indented fences can never be executable openers.
type mdFence struct {
	start  int    // start of the opening line
	opener string // the opening line, without its newline
}

// mdScan is everything Parse needs from the one CommonMark pass over the
// body. Only document-level blocks count: a heading or rule inside a block
// quote or list item is part of that prose, not document structure.
type mdScan struct {
	headings []mdHeading
	breaks   []int // start offsets of thematic-break lines
	fences   []mdFence
}

// commonMark is the one CommonMark parser every Parse uses. Making a
// goldmark parser and its first Parse (which registers and sorts its block
// and inline parsers) cost several times the parse of a short prompt: on a
// 10,000-prompt catalog, a parser per file was about a quarter of the
// boot's CPU. A parser is configuration only after that set-up, which it
// does once under its own sync.Once; each Parse keeps its state in a
// context of its own, so one parser serves concurrent callers (goldmark's
// own Convert shares one the same way): TestParseConcurrentlyMatchesParseAlone
// under -race, and the catalog's parallel resolution, test that.
var commonMark = goldmark.DefaultParser()

// scanMarkdown parses the body once with CommonMark (no extensions).
func scanMarkdown(s *source, bodyStart int) mdScan {
	body := s.doc[bodyStart:]
	root := commonMark.Parse(text.NewReader(body))
	var out mdScan
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		pos := n.Pos()
		if pos < 0 {
			continue
		}
		at := bodyStart + pos
		switch n := n.(type) {
		case *ast.Heading:
			h := mdHeading{level: n.Level, text: headingText(n, body), start: s.lineStart(at)}
			h.line = s.line(h.start)
			lines := n.Lines()
			if lines.Len() > 0 && lines.At(0).Start == pos {
				// Setext: the underline is the line after the last text line.
				last := bodyStart + lines.At(lines.Len()-1).Stop
				h.end = s.lineEnd(s.lineEnd(max(last-1, at)))
			} else {
				h.end = s.lineEnd(at)
			}
			out.headings = append(out.headings, h)
		case *ast.ThematicBreak:
			out.breaks = append(out.breaks, s.lineStart(at))
		case *ast.FencedCodeBlock:
			if s.lineStart(at) == at {
				out.fences = append(out.fences, mdFence{start: at, opener: s.lineText(at)})
			}
		}
	}
	return out
}

// headingText concatenates a heading's text and inline-code content, the way
// an author reads it: emphasis markers, link targets and raw HTML drop out.
func headingText(h *ast.Heading, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(h, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.CodeSpan:
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				switch c := c.(type) {
				case *ast.Text:
					b.Write(c.Segment.Value(src))
				case *ast.String:
					b.Write(c.Value)
				}
			}
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			b.Write(resolveInline(n.Segment.Value(src)))
		case *ast.String:
			if n.IsCode() {
				b.Write(n.Value)
			} else {
				b.Write(resolveInline(n.Value))
			}
		case *ast.AutoLink:
			b.Write(n.Label(src))
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

// resolveInline resolves backslash escapes and character references in
// heading text.
func resolveInline(v []byte) []byte {
	return util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
}
