package prompt

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// The exact opening lines of executable fences. Anything else (```Lua,
// ```lua  with a trailing space, ```lua extra) is prose.
const (
	openerLua    = "```lua"
	openerShared = "```lua shared"
	closerLua    = "```"
)

// region is the live content of the H1 or of one section, already cut at a
// comment rule.
type region struct {
	p          *parser
	start, end int
	h1         bool
	section    *Section // nil for the H1
}

// luaFence is one executable fence located in a region.
type luaFence struct {
	opener   int // start of the opening line
	src, eos int // the Lua source, [src, eos)
	next     int // start of the line after the closing line
	shared   bool
}

type piece struct{ start, end int }

// split turns the region into blocks, compiling every Lua fence. The
// shared library (H1 only) is returned apart and does not separate prose.
func (r region) split() ([]Block, *Chunk, *ParseError) {
	fences, perr := r.fences()
	if perr != nil {
		return nil, nil, perr
	}
	doc := r.p.src.doc
	var (
		blocks  []Block
		luaSrc  []luaFence // aligned with the Lua blocks, for compiling
		shared  *luaFence
		pending []piece // prose gathered since the last Lua fence
		cursor  = r.start
	)
	for i := range fences {
		f := &fences[i]
		pending = append(pending, piece{cursor, f.opener})
		cursor = f.next
		if f.shared {
			shared = f
			continue
		}
		if len(blocks) > 0 || !piecesBlank(doc, pending) {
			blocks = append(blocks, r.prose(pending))
		}
		pending = pending[:0]
		blocks = append(blocks, Block{Kind: BlockLua, Line: r.p.src.line(f.src)})
		luaSrc = append(luaSrc, *f)
	}
	pending = append(pending, piece{cursor, r.end})
	if len(luaSrc) == 0 || !piecesBlank(doc, pending) {
		blocks = append(blocks, r.prose(pending))
	}

	hasProse := false
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].Kind == BlockProse {
			blocks[i].LoopCapable = true
			hasProse = true
			break
		}
	}

	li := 0
	for i := range blocks {
		if blocks[i].Kind != BlockLua {
			continue
		}
		name := r.chunkName(i, len(blocks), hasProse)
		ch, perr := r.p.compile(name, luaSrc[li])
		if perr != nil {
			return nil, nil, perr
		}
		blocks[i].Lua = ch
		li++
	}

	var lib *Chunk
	if shared != nil {
		if lib, perr = r.p.compile("prompt shared library", *shared); perr != nil {
			return nil, nil, perr
		}
	}
	return blocks, lib, nil
}

func (r region) chunkName(i, n int, hasProse bool) string {
	if r.h1 {
		return fmt.Sprintf("H1 `%s` lua", r.p.title)
	}
	switch {
	case i == 0:
		return fmt.Sprintf("section `%s` prologue", r.section.Name)
	case i == n-1 && hasProse:
		return fmt.Sprintf("section `%s` epilog", r.section.Name)
	}
	return fmt.Sprintf("section `%s` lua", r.section.Name)
}

// fences locates the executable fences of the region. Openers come from the
// CommonMark scan (so a ```lua line inside a longer fence is code, not an
// opener); each runs to the first line that is exactly ```.
func (r region) fences() ([]luaFence, *ParseError) {
	all := r.p.md.fences
	i := sort.Search(len(all), func(i int) bool { return all[i].start >= r.start })
	var cands []mdFence
	for ; i < len(all) && all[i].start < r.end; i++ {
		if o := all[i].opener; o == openerLua || o == openerShared {
			cands = append(cands, all[i])
		}
	}
	doc := r.p.src.doc
	var (
		out        []luaFence
		cursor     = r.start
		textBefore bool
		sawShared  bool
		nLua       int
	)
	for ci, c := range cands {
		if c.start < cursor {
			continue // inside the previous fence's source
		}
		if !isBlank(doc[cursor:c.start]) {
			textBefore = true
		}
		f := luaFence{opener: c.start, shared: c.opener == openerShared}
		line := r.p.src.line(c.start)
		if f.shared {
			if !r.h1 {
				return nil, &ParseError{Kind: KindFence, Line: line,
					Msg: "`lua shared` fence is allowed only in H1"}
			}
			if sawShared {
				return nil, &ParseError{Kind: KindFence, Line: line,
					Msg: "prompt allows at most one `lua shared` fence"}
			}
			sawShared = true
		}
		f.src = r.p.src.lineEnd(c.start)
		closeAt := r.closingLine(f.src)
		if closeAt < 0 {
			return nil, &ParseError{Kind: KindFence, Line: line,
				Msg: r.unclosedLabel(f.shared, nLua == 0 && !textBefore, laterLua(cands[ci+1:])) + " fence is not closed"}
		}
		if perr := r.runsOn(f, line, cands[ci+1:], closeAt, nLua == 0 && !textBefore); perr != nil {
			return nil, perr
		}
		f.eos, f.next = closeAt, r.p.src.lineEnd(closeAt)
		cursor = f.next
		if !f.shared {
			nLua++
		}
		out = append(out, f)
	}
	return out, nil
}

// closingLine returns the start of the first line at or after off that is
// exactly ```, or -1 when the region has none.
func (r region) closingLine(off int) int {
	for off < r.end {
		if r.p.src.lineText(off) == closerLua {
			return off
		}
		off = r.p.src.lineEnd(off)
	}
	return -1
}

// runsOn refuses a fence whose source would run on through the opener of
// another Lua fence before its first exact ``` line. CommonMark closed the
// fence earlier, on a near miss ("``` ", "````"), which is why the later
// opener is a candidate at all; what the author meant is plain, so the
// error says so (kind Fence, "not closed exactly") rather than leaving a
// Lua compile error about a stray ```lua line inside the chunk.
func (r region) runsOn(f luaFence, line int, later []mdFence, closeAt int, leading bool) *ParseError {
	if len(later) == 0 || later[0].start >= closeAt {
		return nil
	}
	near := ""
	for off := f.src; off < later[0].start; off = r.p.src.lineEnd(off) {
		if t := strings.TrimSpace(string(r.p.src.lineText(off))); strings.HasPrefix(t, closerLua) && strings.Trim(t, "`") == "" {
			near = fmt.Sprintf(": line %d, %q, is not ``` alone", r.p.src.line(off), r.p.src.lineText(off))
			break
		}
	}
	return &ParseError{Kind: KindFence, Line: line,
		Msg: fmt.Sprintf("%s fence is not closed exactly%s, so its Lua runs on into the fence at line %d; end the fence with a line that is exactly ```",
			r.unclosedLabel(f.shared, leading, true), near, r.p.src.line(later[0].start))}
}

func laterLua(cands []mdFence) bool {
	for _, c := range cands {
		if c.opener == openerLua {
			return true
		}
	}
	return false
}

func (r region) unclosedLabel(shared, leading, later bool) string {
	switch {
	case shared:
		return "prompt `lua shared`"
	case r.h1:
		return fmt.Sprintf("H1 `%s` `lua`", r.p.title)
	case leading:
		return fmt.Sprintf("section `%s` prologue `lua`", r.section.Name)
	case !later:
		return fmt.Sprintf("section `%s` epilog `lua`", r.section.Name)
	}
	return fmt.Sprintf("section `%s` `lua`", r.section.Name)
}

// prose builds a prose block from the text pieces between Lua fences (more
// than one only when a shared fence sat between them).
func (r region) prose(pieces []piece) Block {
	doc := r.p.src.doc
	var b strings.Builder
	first := -1
	for _, pc := range pieces {
		seg := doc[pc.start:pc.end]
		if first < 0 {
			if k := strings.IndexFunc(string(seg), notSpace); k >= 0 {
				first = pc.start + k
			}
		}
		b.Write(seg)
	}
	if first < 0 {
		first = pieces[0].start
	}
	return Block{Kind: BlockProse, Text: strings.TrimSpace(b.String()), Line: r.p.src.line(first)}
}

func piecesBlank(doc []byte, pieces []piece) bool {
	for _, pc := range pieces {
		if !isBlank(doc[pc.start:pc.end]) {
			return false
		}
	}
	return true
}

func notSpace(r rune) bool { return !unicode.IsSpace(r) }
