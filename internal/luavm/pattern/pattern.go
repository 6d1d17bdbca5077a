// This file is a modified copy of package pm of github.com/yuin/gopher-lua
// v1.1.2 (pm/pm.go), Copyright (c) 2015 Yusuke Inuzuka, under the MIT
// licence in the LICENSE file of this directory. The pattern parser, the
// compiled instruction set and the matching semantics are gopher-lua's.
//
// Changes from pm:
//   - The matcher counts its steps (one step is one executed instruction or
//     one byte scanned by %b) and checks a context every checkEvery steps;
//     a done context ends the match with its error.
//   - The recursive VM became an explicit backtracking stack on the heap,
//     bounded by pm's 1,000,000-level limit ("pattern/input too complex"):
//     pm's recursion grew the goroutine stack to 256 MiB for "(.*)" over
//     900 KB, the stack entries here take 32 bytes a level.
//   - Subjects are strings (no []byte conversion) and capture positions are
//     ints (pm packed them into uint32).
//   - Compiling is separate from matching, and Find returns the first match
//     at or after a position, so callers iterate lazily.
//   - A back reference to a position capture reads as empty instead of
//     slicing the subject with the position (which panicked at its end).
//   - Names and comments are ours; commented-out code is gone.

package pattern

import (
	"context"
	"fmt"
)

const (
	eos     = -1
	unknown = -2

	// maxDepth is pm's maxRecursionLevel: the deepest backtracking stack a
	// match may build.
	maxDepth = 1000000
	// checkEvery is how many steps run between two context checks: often
	// enough that a budget or a cancellation stops a match within
	// microseconds, rarely enough that the check costs nothing measurable.
	checkEvery = 1 << 12
)

// Error is a malformed pattern or a match too complex to finish.
type Error struct {
	Pos     int
	Message string
}

func newError(pos int, message string, args ...any) *Error {
	if len(args) == 0 {
		return &Error{pos, message}
	}
	return &Error{pos, fmt.Sprintf(message, args...)}
}

func (e *Error) Error() string {
	switch e.Pos {
	case eos:
		return e.Message + " at EOS"
	case unknown:
		return e.Message
	default:
		return fmt.Sprintf("%s at %d", e.Message, e.Pos)
	}
}

// ---- match data ----

// Match is one successful match. Slot pairs hold the whole match (pair 0)
// and then each capture; a position capture stores its 1-based position in
// both slots of its pair and sets the low bit.
type Match struct {
	caps []int
}

func (m *Match) setCapture(s, pos int) int {
	for s >= len(m.caps) {
		m.caps = append(m.caps, 0)
	}
	old := m.caps[s]
	m.caps[s] = pos << 1
	return old
}

func (m *Match) addPosCapture(s, pos int) {
	for s+1 >= len(m.caps) {
		m.caps = append(m.caps, 0)
	}
	m.caps[s] = pos<<1 | 1
	m.caps[s+1] = pos<<1 | 1
}

func (m *Match) slot(i int) int { return m.caps[i] >> 1 }

// Start and End are the byte offsets of the whole match (End exclusive).
func (m *Match) Start() int { return m.slot(0) }
func (m *Match) End() int   { return m.slot(1) }

// Captures is the number of captures in the pattern (the whole match is
// not one).
func (m *Match) Captures() int { return len(m.caps)/2 - 1 }

// Capture returns capture i (1-based): the byte offsets of the captured
// text, or, for a position capture "()", pos set and start = end = the
// 1-based position it captured.
func (m *Match) Capture(i int) (start, end int, pos bool) {
	s := 2 * i
	return m.slot(s), m.slot(s + 1), m.caps[s]&1 == 1
}

// ---- pattern scanner ----

type scannerState struct {
	pos     int
	started bool
}

type scanner struct {
	src   string
	state scannerState
	saved scannerState
}

func newScanner(src string) *scanner { return &scanner{src: src} }

func (sc *scanner) length() int { return len(sc.src) }

func (sc *scanner) next() int {
	if !sc.state.started {
		sc.state.started = true
		if len(sc.src) == 0 {
			sc.state.pos = eos
		}
	} else {
		sc.state.pos = sc.nextPos()
	}
	if sc.state.pos == eos {
		return eos
	}
	return int(sc.src[sc.state.pos])
}

func (sc *scanner) currentPos() int { return sc.state.pos }

func (sc *scanner) nextPos() int {
	if sc.state.pos == eos || sc.state.pos >= len(sc.src)-1 {
		return eos
	}
	if !sc.state.started {
		return 0
	}
	return sc.state.pos + 1
}

func (sc *scanner) peek() int {
	atEOS := sc.state.pos == eos
	ch := sc.next()
	if !atEOS {
		if sc.state.pos == eos {
			sc.state.pos = len(sc.src) - 1
		} else {
			sc.state.pos--
			if sc.state.pos < 0 {
				sc.state.pos = 0
				sc.state.started = false
			}
		}
	}
	return ch
}

func (sc *scanner) save()    { sc.saved = sc.state }
func (sc *scanner) restore() { sc.state = sc.saved }

// ---- instructions ----

type opCode uint8

const (
	opChar opCode = iota
	opMatch
	opTailMatch
	opJmp
	opSplit
	opSave
	opPSave
	opBrace
	opNumber
)

type inst struct {
	op    opCode
	class class
	x, y  int
}

// ---- character classes ----

type class interface {
	matches(ch int) bool
}

type dotClass struct{}

func (dotClass) matches(int) bool { return true }

type charClass struct{ ch int }

func (c *charClass) matches(ch int) bool { return c.ch == ch }

// singleClass is a %x class; upper-case letters negate the lower-case one.
type singleClass struct{ class int }

func (c *singleClass) matches(ch int) bool {
	ret := false
	switch c.class {
	case 'a', 'A':
		ret = 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z'
	case 'c', 'C':
		ret = (0x00 <= ch && ch <= 0x1F) || ch == 0x7F
	case 'd', 'D':
		ret = '0' <= ch && ch <= '9'
	case 'l', 'L':
		ret = 'a' <= ch && ch <= 'z'
	case 'p', 'P':
		ret = (0x21 <= ch && ch <= 0x2f) || (0x3a <= ch && ch <= 0x40) || (0x5b <= ch && ch <= 0x60) || (0x7b <= ch && ch <= 0x7e)
	case 's', 'S':
		switch ch {
		case ' ', '\f', '\n', '\r', '\t', '\v':
			ret = true
		}
	case 'u', 'U':
		ret = 'A' <= ch && ch <= 'Z'
	case 'w', 'W':
		ret = '0' <= ch && ch <= '9' || 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z'
	case 'x', 'X':
		ret = '0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F'
	case 'z', 'Z':
		ret = ch == 0
	default:
		return ch == c.class
	}
	if 'A' <= c.class && c.class <= 'Z' {
		return !ret
	}
	return ret
}

type setClass struct {
	negated bool
	classes []class
}

func (c *setClass) matches(ch int) bool {
	for _, cl := range c.classes {
		if cl.matches(ch) {
			return !c.negated
		}
	}
	return c.negated
}

type rangeClass struct {
	begin, end class
}

func (c *rangeClass) matches(ch int) bool {
	begin, ok := c.begin.(*charClass)
	if !ok {
		return false
	}
	end, ok := c.end.(*charClass)
	if !ok {
		return false
	}
	return begin.ch <= ch && ch <= end.ch
}

// ---- pattern tree ----

type node any

type singleNode struct{ class class }

type seqNode struct {
	mustHead, mustTail bool
	nodes              []node
}

type repeatNode struct {
	kind  int
	class class
}

type posCapNode struct{}

type capNode struct{ inner node }

type numberNode struct{ n int }

type braceNode struct{ begin, end int }

// ---- parser ----

func parseClass(sc *scanner, allowSet bool) class {
	ch := sc.next()
	switch ch {
	case '%':
		return &singleClass{sc.next()}
	case '.':
		if allowSet {
			return dotClass{}
		}
		return &charClass{ch}
	case '[':
		if allowSet {
			return parseClassSet(sc)
		}
		return &charClass{ch}
	case eos:
		panic(newError(sc.currentPos(), "unexpected EOS"))
	default:
		return &charClass{ch}
	}
}

func parseClassSet(sc *scanner) class {
	set := &setClass{}
	if sc.peek() == '^' {
		set.negated = true
		sc.next()
	}
	isRange := false
	for {
		ch := sc.peek()
		switch ch {
		case eos:
			panic(newError(sc.currentPos(), "unexpected EOS"))
		case ']':
			if len(set.classes) > 0 {
				sc.next()
				if isRange {
					set.classes = append(set.classes, &charClass{'-'})
				}
				return set
			}
			fallthrough
		case '-':
			if len(set.classes) > 0 {
				sc.next()
				isRange = true
				continue
			}
			fallthrough
		default:
			set.classes = append(set.classes, parseClass(sc, false))
		}
		if isRange {
			n := len(set.classes)
			begin, end := set.classes[n-2], set.classes[n-1]
			set.classes = append(set.classes[:n-2], &rangeClass{begin, end})
			isRange = false
		}
	}
}

func parseSeq(sc *scanner, topLevel bool) *seqNode {
	pat := &seqNode{}
	if topLevel && sc.peek() == '^' {
		sc.next()
		pat.mustHead = true
	}
	for {
		ch := sc.peek()
		switch ch {
		case '%':
			sc.save()
			sc.next()
			switch sc.peek() {
			case '0':
				panic(newError(sc.currentPos(), "invalid capture index"))
			case '1', '2', '3', '4', '5', '6', '7', '8', '9':
				pat.nodes = append(pat.nodes, &numberNode{sc.next() - '0'})
			case 'b':
				sc.next()
				begin := sc.next()
				end := sc.next()
				pat.nodes = append(pat.nodes, &braceNode{begin, end})
			default:
				sc.restore()
				pat.nodes = append(pat.nodes, &singleNode{parseClass(sc, true)})
			}
		case '.', '[', ']':
			pat.nodes = append(pat.nodes, &singleNode{parseClass(sc, true)})
		case ')':
			if topLevel {
				panic(newError(sc.currentPos(), "invalid ')'"))
			}
			return pat
		case '(':
			sc.next()
			if sc.peek() == ')' {
				sc.next()
				pat.nodes = append(pat.nodes, &posCapNode{})
			} else {
				c := &capNode{parseSeq(sc, false)}
				if sc.peek() != ')' {
					panic(newError(sc.currentPos(), "unfinished capture"))
				}
				sc.next()
				pat.nodes = append(pat.nodes, c)
			}
		case '*', '+', '-', '?':
			sc.next()
			if n := len(pat.nodes); n > 0 {
				if single, ok := pat.nodes[n-1].(*singleNode); ok {
					pat.nodes[n-1] = &repeatNode{ch, single.class}
					continue
				}
			}
			pat.nodes = append(pat.nodes, &singleNode{&charClass{ch}})
		case '$':
			if topLevel && (sc.nextPos() == sc.length()-1 || sc.nextPos() == eos) {
				pat.mustTail = true
			} else {
				pat.nodes = append(pat.nodes, &singleNode{&charClass{ch}})
			}
			sc.next()
		case eos:
			sc.next()
			return pat
		default:
			sc.next()
			pat.nodes = append(pat.nodes, &singleNode{&charClass{ch}})
		}
	}
}

// ---- compiler ----

type program struct {
	insts   []inst
	capture int // next capture slot
}

func (pr *program) emit(p node) {
	switch pat := p.(type) {
	case *singleNode:
		pr.insts = append(pr.insts, inst{opChar, pat.class, -1, -1})
	case *seqNode:
		for _, n := range pat.nodes {
			pr.emit(n)
		}
	case *repeatNode:
		idx := len(pr.insts)
		switch pat.kind {
		case '*':
			pr.insts = append(pr.insts,
				inst{opSplit, nil, idx + 1, idx + 3},
				inst{opChar, pat.class, -1, -1},
				inst{opJmp, nil, idx, -1})
		case '+':
			pr.insts = append(pr.insts,
				inst{opChar, pat.class, -1, -1},
				inst{opSplit, nil, idx, idx + 2})
		case '-':
			pr.insts = append(pr.insts,
				inst{opSplit, nil, idx + 3, idx + 1},
				inst{opChar, pat.class, -1, -1},
				inst{opJmp, nil, idx, -1})
		case '?':
			pr.insts = append(pr.insts,
				inst{opSplit, nil, idx + 1, idx + 2},
				inst{opChar, pat.class, -1, -1})
		}
	case *posCapNode:
		pr.insts = append(pr.insts, inst{opPSave, nil, pr.capture, -1})
		pr.capture += 2
	case *capNode:
		c0, c1 := pr.capture, pr.capture+1
		pr.capture += 2
		pr.insts = append(pr.insts, inst{opSave, nil, c0, -1})
		pr.emit(pat.inner)
		pr.insts = append(pr.insts, inst{opSave, nil, c1, -1})
	case *braceNode:
		pr.insts = append(pr.insts, inst{opBrace, nil, pat.begin, pat.end})
	case *numberNode:
		pr.insts = append(pr.insts, inst{opNumber, nil, pat.n, -1})
	}
}

// Pattern is a compiled Lua pattern.
type Pattern struct {
	insts    []inst
	anchored bool
}

// Compile parses a Lua pattern.
func Compile(p string) (pat *Pattern, err error) {
	defer func() {
		if v := recover(); v != nil {
			perr, ok := v.(*Error)
			if !ok {
				panic(v)
			}
			err = perr
		}
	}()
	seq := parseSeq(newScanner(p), true)
	pr := &program{insts: []inst{{opSave, nil, 0, -1}}, capture: 2}
	pr.emit(seq)
	if seq.mustTail {
		pr.insts = append(pr.insts, inst{opSave, nil, 1, -1}, inst{opTailMatch, nil, -1, -1})
	}
	pr.insts = append(pr.insts, inst{opSave, nil, 1, -1}, inst{opMatch, nil, -1, -1})
	return &Pattern{insts: pr.insts, anchored: seq.mustHead}, nil
}

// Anchored reports whether the pattern starts with '^': it then matches
// only at the position a search starts from.
func (p *Pattern) Anchored() bool { return p.anchored }

// ---- matcher ----

// choice is one entry of the backtracking stack: a split's untried
// alternative (slot < 0), or a capture slot to restore when the path that
// set it fails.
type choice struct {
	pc, sp    int
	slot, old int
}

// matcher is the state of one Find call.
type matcher struct {
	ctx   context.Context
	src   string
	insts []inst
	steps int
	stack []choice
}

// step counts one unit of work and checks the context every checkEvery
// steps.
func (m *matcher) step() error {
	m.steps++
	if m.steps < checkEvery {
		return nil
	}
	m.steps = 0
	return m.ctx.Err()
}

func (m *matcher) push(c choice) error {
	m.stack = append(m.stack, c)
	// The original counted recursion levels from 1 at the top call.
	if len(m.stack)+1 > maxDepth {
		return newError(unknown, "pattern/input too complex")
	}
	return nil
}

// attempt matches the program anchored at sp. It has pm's recursive VM's
// semantics: a split tries its first branch and falls back to the second;
// a save sets a capture slot and restores it when the rest of the match
// fails.
func (m *matcher) attempt(sp int) (*Match, error) {
	md := &Match{}
	m.stack = m.stack[:0]
	src, insts := m.src, m.insts
	pc := 0
	for {
		if err := m.step(); err != nil {
			return nil, err
		}
		in := &insts[pc]
		switch in.op {
		case opChar:
			if sp < len(src) && in.class.matches(int(src[sp])) {
				pc++
				sp++
				continue
			}
		case opMatch:
			return md, nil
		case opTailMatch:
			if sp >= len(src) {
				return md, nil
			}
		case opJmp:
			pc = in.x
			continue
		case opSplit:
			if err := m.push(choice{pc: in.y, sp: sp, slot: -1}); err != nil {
				return nil, err
			}
			pc = in.x
			continue
		case opSave:
			old := md.setCapture(in.x, sp)
			if err := m.push(choice{slot: in.x, old: old}); err != nil {
				return nil, err
			}
			pc++
			continue
		case opPSave:
			md.addPosCapture(in.x, sp+1)
			pc++
			continue
		case opBrace:
			end, err := m.balanced(sp, in.x, in.y)
			if err != nil {
				return nil, err
			}
			if end >= 0 {
				pc++
				sp = end
				continue
			}
		case opNumber:
			capture, err := md.backReference(src, in.x)
			if err != nil {
				return nil, err
			}
			if len(src)-sp >= len(capture) && src[sp:sp+len(capture)] == capture {
				pc++
				sp += len(capture)
				continue
			}
		default:
			panic(fmt.Sprintf("pattern: unknown instruction %d", in.op))
		}
		// Backtrack to the most recent untried alternative, undoing the
		// capture saves made since.
		for {
			if len(m.stack) == 0 {
				return nil, nil
			}
			c := m.stack[len(m.stack)-1]
			m.stack = m.stack[:len(m.stack)-1]
			if c.slot >= 0 {
				md.caps[c.slot] = c.old
				continue
			}
			pc, sp = c.pc, c.sp
			break
		}
	}
}

// balanced matches %b<open><close> at sp and returns the offset after the
// closing byte, or -1.
func (m *matcher) balanced(sp, open, close int) (int, error) {
	src := m.src
	if sp >= len(src) || int(src[sp]) != open {
		return -1, nil
	}
	depth := 1
	for sp++; sp < len(src); sp++ {
		if err := m.step(); err != nil {
			return -1, err
		}
		if int(src[sp]) == close {
			depth--
		}
		if depth == 0 {
			return sp + 1, nil
		}
		if int(src[sp]) == open {
			depth++
		}
	}
	return -1, nil
}

// backReference is the text of capture n for %n. A capture that is not
// closed yet is an error, as in pm; a position capture reads as empty
// (pm sliced the subject with it, which panicked at the subject's end).
func (md *Match) backReference(src string, n int) (string, error) {
	idx := n * 2
	if idx >= len(md.caps)-1 {
		return "", newError(unknown, "invalid capture index")
	}
	if md.caps[idx]&1 == 1 {
		return "", nil
	}
	start, end := md.slot(idx), md.slot(idx+1)
	if start > end || end > len(src) {
		return "", newError(unknown, "invalid capture index")
	}
	return src[start:end], nil
}

// Find returns the first match that starts at or after byte offset init
// (an anchored pattern is tried at init only), or nil when there is none.
// The error is a *Error when the match is too complex, or ctx's error when
// ctx ended while matching.
func (p *Pattern) Find(ctx context.Context, src string, init int) (*Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := &matcher{ctx: ctx, src: src, insts: p.insts}
	for sp := init; sp <= len(src); sp++ {
		md, err := m.attempt(sp)
		if err != nil || md != nil {
			return md, err
		}
		if p.anchored {
			break
		}
	}
	return nil, nil
}
