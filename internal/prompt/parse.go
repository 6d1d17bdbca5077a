package prompt

import (
	"fmt"
	"sort"
	"strings"
)

// Observation details Parse reports. They are fixed strings with no payload,
// so an observer can never leak prompt content.
const (
	ObsParseStarted        = "Parse started"
	ObsParseSucceeded      = "Parse succeeded"
	ObsParseFailed         = "Parse failed"
	ObsLuaCompileStarted   = "Lua compilation started"
	ObsLuaCompileSucceeded = "Lua compilation succeeded"
	ObsLuaCompileFailed    = "Lua compilation failed"
)

// Span is a byte range of the original file (BOM and \r included). The
// zero Span means "no span".
type Span struct {
	Start, End int
}

// ParseObserved is Parse with an observer that receives the fixed details
// above in order: parse started, compile started/succeeded per Lua chunk,
// then parse succeeded or failed. observe may be nil.
func ParseObserved(src []byte, observe func(detail string)) (*Prompt, error) {
	if observe == nil {
		observe = func(string) {}
	}
	observe(ObsParseStarted)
	p := &parser{src: newSource(src), observe: observe}
	out, perr := p.parse()
	if perr != nil {
		observe(ObsParseFailed)
		return nil, perr
	}
	observe(ObsParseSucceeded)
	return out, nil
}

type parser struct {
	src     *source
	md      mdScan
	observe func(string)
	title   string
}

func (p *parser) parse() (*Prompt, *ParseError) {
	split, perr := splitFrontmatter(p.src.doc)
	if perr != nil {
		return nil, perr
	}
	fm, perr := decodeFrontmatter(split)
	if perr != nil {
		return nil, perr
	}
	p.md = scanMarkdown(p.src, split.bodyStart)

	h1 := -1
	for i, h := range p.md.headings {
		if h.level != 1 {
			continue
		}
		if h1 >= 0 {
			return nil, &ParseError{Kind: KindStructure, Line: h.line,
				Msg: "prompt must contain exactly one H1 title"}
		}
		h1 = i
	}
	if h1 < 0 {
		return nil, &ParseError{Kind: KindStructure, Msg: "prompt requires an H1 title"}
	}
	title := p.md.headings[h1]
	if title.text == "" {
		return nil, &ParseError{Kind: KindStructure, Line: title.line,
			Msg: "prompt H1 title must not be empty"}
	}
	p.title = title.text
	out := &Prompt{Frontmatter: fm, Title: title.text, TitleLine: title.line}

	// Headings before the H1 are preface and ignored; everything after it
	// is a section.
	heads := p.md.headings[h1+1:]
	sections, perr := p.tree(heads)
	if perr != nil {
		return nil, perr
	}

	if out.H1, out.Shared, perr = p.h1Blocks(title.end, p.regionEnd(heads, -1)); perr != nil {
		return nil, perr
	}
	for i, sec := range sections {
		if perr := p.sectionBlocks(sec, heads[i].end, p.regionEnd(heads, i)); perr != nil {
			return nil, perr
		}
		if sec.Level == 2 {
			out.Sections = append(out.Sections, sec)
		}
	}
	return out, nil
}

// regionEnd is where the content of heads[i] (or the H1, for i == -1) stops:
// at the next heading of any level.
func (p *parser) regionEnd(heads []mdHeading, i int) int {
	if i+1 < len(heads) {
		return heads[i+1].start
	}
	return len(p.src.doc)
}

// tree checks the section headings and links them into a tree. It returns
// the sections in file order, index-aligned with heads.
func (p *parser) tree(heads []mdHeading) ([]*Section, *ParseError) {
	all := make([]*Section, 0, len(heads))
	var stack []*Section
	var top []*Section
	for _, h := range heads {
		if h.text == "" {
			return nil, &ParseError{Kind: KindStructure, Line: h.line,
				Msg: fmt.Sprintf("an H%d section heading must not be empty", h.level)}
		}
		for len(stack) > 0 && stack[len(stack)-1].Level >= h.level {
			stack = stack[:len(stack)-1]
		}
		siblings := &top
		if h.level > 2 {
			if len(stack) == 0 || stack[len(stack)-1].Level != h.level-1 {
				return nil, &ParseError{Kind: KindStructure, Line: h.line,
					Msg: fmt.Sprintf("section `%s` is an orphan H%d heading with no parent H%d",
						h.text, h.level, h.level-1)}
			}
			siblings = &stack[len(stack)-1].Children
		}
		for _, sib := range *siblings {
			if sib.Name == h.text {
				return nil, &ParseError{Kind: KindStructure, Line: h.line,
					Span: p.src.span(h.start, h.end),
					Msg: fmt.Sprintf("duplicate sibling section name `%s`: first declared at line %d, again at line %d; sibling section names must be unique",
						h.text, sib.Line, h.line)}
			}
		}
		sec := &Section{Name: h.text, Level: h.level, Line: h.line}
		*siblings = append(*siblings, sec)
		stack = append(stack, sec)
		all = append(all, sec)
	}
	return all, nil
}

// breaksIn returns the thematic breaks whose line starts in [start, end).
func (p *parser) breaksIn(start, end int) []int {
	b := p.md.breaks
	i := sort.SearchInts(b, start)
	j := sort.SearchInts(b, end)
	return b[i:j]
}

func (p *parser) h1Blocks(start, end int) ([]Block, *Chunk, *ParseError) {
	// In the H1 a rule only ever opens a comment region.
	if br := p.breaksIn(start, end); len(br) > 0 {
		end = br[0]
	}
	if perr := p.checkRemovedForm(start, end); perr != nil {
		return nil, nil, perr
	}
	r := region{p: p, start: start, end: end, h1: true}
	blocks, shared, perr := r.split()
	if perr != nil {
		return nil, nil, perr
	}
	if len(blocks) == 1 && blocks[0].Kind == BlockProse && blocks[0].Text == "" {
		blocks = nil
	}
	return blocks, shared, nil
}

func (p *parser) sectionBlocks(sec *Section, start, end int) *ParseError {
	if br := p.breaksIn(start, end); len(br) > 0 {
		if isBlank(p.src.doc[start:br[0]]) {
			// Off-walk marker: the rule line is dropped, which is the same
			// as blanking it since only whitespace precedes it, and line
			// numbers come from offsets so they hold.
			sec.OffWalk = true
			start = p.src.lineEnd(br[0])
			br = br[1:]
		}
		if len(br) > 0 {
			end = br[0]
		}
	}
	r := region{p: p, start: start, end: end, section: sec}
	blocks, _, perr := r.split()
	if perr != nil {
		return perr
	}
	sec.Blocks = blocks
	if len(blocks) == 1 && blocks[0].Kind == BlockProse {
		items, perr := listItems(sec.Name, blocks[0].Text)
		if perr != nil {
			perr.Line += blocks[0].Line - 1
			return perr
		}
		sec.Items = items
	}
	return nil
}

// checkRemovedForm rejects an H1 that opens with the retired `lua prompt`
// fence, so an old prompt fails loudly instead of sending its code as prose.
func (p *parser) checkRemovedForm(start, end int) *ParseError {
	for off := start; off < end; {
		lineEnd := p.src.lineEnd(off)
		line := strings.TrimRight(string(p.src.doc[off:min(lineEnd, end)]), " \t\n\r")
		if strings.TrimSpace(line) == "" {
			off = lineEnd
			continue
		}
		if line == "```lua prompt" || strings.HasPrefix(line, "```lua prompt ") {
			return &ParseError{Kind: KindFence, Line: p.src.line(off),
				Msg: "the `lua prompt` fence form was removed: use a `lua` fence (runs once in the H1) or a `lua shared` fence (replayed at the start of every section)"}
		}
		return nil
	}
	return nil
}

func isBlank(b []byte) bool {
	return strings.TrimSpace(string(b)) == ""
}
