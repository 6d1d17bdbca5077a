package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/prompt"
)

// frame is what the units of one walk share: their nesting depth, the
// args they see, and whether they run inside a fanout arm. The context
// they run under (the run's, or a fanout's that is also cancelled when a
// sibling arm fails) is not part of it: it is passed down as a parameter.
type frame struct {
	depth int
	args  string
	// inArm marks units of a fanout arm (and of chains started inside
	// one); their lifecycle observations are not reported (see observe).
	inArm bool
	// parent is the unit that started this walk, for the tracer: 0 for
	// the top level.
	parent uint32
}

// walkEnd is how a walk ended: a scalar return (value), or the slice ran
// out with the rolling reply.
type walkEnd struct {
	returned bool
	value    string
	reply    *string
}

// text is what a chain produces for its caller: its return value, else its
// final reply, else "".
func (e walkEnd) text() string {
	switch {
	case e.returned:
		return e.value
	case e.reply != nil:
		return *e.reply
	}
	return ""
}

// entry is how a walk enters the section it starts at: with the rolling
// reply it carries, and with the var its sections share (a jump to a child
// starts a child walk that shares it too). addressed makes that first
// section run even when it is off-walk.
type entry struct {
	reply     *string
	v         *luavm.Var
	addressed bool
	// via is how the first section is entered (for the tracer).
	via Via
}

// flow is how one section entry ended.
type flow struct {
	returned bool
	value    string
	reply    *string
	jump     *place
}

// place is where a section sits: the sibling slice that holds it (itself
// included), the slice's owner (nil for the top level) and its index.
// Walks, chains and arms all start at a place.
type place struct {
	slice  []*prompt.Section
	parent *prompt.Section
	index  int
}

func (p place) section() *prompt.Section { return p.slice[p.index] }

func (p place) heading() string {
	s := p.section()
	return strings.Repeat("#", s.Level) + " " + s.Name
}

// visibleFrom is the visible set of the section at p (prompt-language §2.10):
// its siblings without itself, then its own children.
func visibleFrom(p place) []place {
	self := p.section()
	out := make([]place, 0, len(p.slice)-1+len(self.Children))
	for j := range p.slice {
		if j != p.index {
			out = append(out, place{slice: p.slice, parent: p.parent, index: j})
		}
	}
	for k := range self.Children {
		out = append(out, place{slice: self.Children, parent: self, index: k})
	}
	return out
}

// armVisible is a fanout arm's visible set (prompt-language §7): the caller's
// visible set without the worker, then the worker's children.
func armVisible(caller []place, worker place) []place {
	w := worker.section()
	out := make([]place, 0, len(caller)-1+len(w.Children))
	for _, p := range caller {
		if p.section() != w {
			out = append(out, p)
		}
	}
	for k := range w.Children {
		out = append(out, place{slice: w.Children, parent: w, index: k})
	}
	return out
}

// walk runs the sections of from's slice, starting at from
// (prompt-language §3.3).
func (r *run) walk(ctx context.Context, fr frame, from place, in entry) (walkEnd, error) {
	at, reply, addressed, via := from, in.reply, in.addressed, in.via
	if via == ViaRun {
		via = ViaWalk
	}
	for at.index < len(at.slice) {
		s := at.section()
		if !addressed && s.OffWalk {
			at.index++
			continue
		}
		addressed = false
		if r.speculationOver() {
			return walkEnd{}, speculationStopped()
		}
		f, err := r.newUnit(fr, at, via).runSection(ctx, reply, in.v)
		if err != nil {
			return walkEnd{}, err
		}
		reply, via = f.reply, ViaWalk
		switch {
		case f.returned:
			return walkEnd{returned: true, value: f.value}, nil
		case f.jump == nil:
			at.index++
		case f.jump.parent == s:
			// A child: walk the jumper's children from the target, then
			// resume this walk after the jumper with the child walk's reply.
			end, err := r.walk(ctx, fr, *f.jump, entry{reply: reply, v: in.v, addressed: true, via: ViaJump})
			if err != nil {
				return walkEnd{}, err
			}
			if end.returned {
				return end, nil
			}
			reply = end.reply
			at.index++
		default:
			at.index = f.jump.index
			addressed, via = true, ViaJump
		}
	}
	return walkEnd{reply: reply}, nil
}

// parseHeading splits "## Name" into its level and name.
func parseHeading(target string) (int, string, error) {
	t := strings.TrimSpace(target)
	level := 0
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 {
		return 0, "", luavm.Scriptf("section heading must include ### markers, got bare name: %s", t)
	}
	rest := t[level:]
	if strings.TrimSpace(rest) == "" {
		return 0, "", luavm.Scriptf("section heading has no name: %s", t)
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", luavm.Scriptf("section heading must have whitespace after the ### markers: %s", t)
	}
	return level, strings.TrimSpace(rest), nil
}

// resolveTarget finds a heading in a visible set.
func resolveTarget(visible []place, target string) (place, error) {
	level, name, err := parseHeading(target)
	if err != nil {
		return place{}, err
	}
	var found []place
	for _, p := range visible {
		if s := p.section(); s.Level == level && s.Name == name {
			found = append(found, p)
		}
	}
	heading := strings.Repeat("#", level) + " " + name
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		avail := make([]string, len(visible))
		for i, p := range visible {
			avail[i] = p.heading()
		}
		return place{}, luavm.Scriptf("section heading `%s` not found; available sections: %s", heading, strings.Join(avail, ", "))
	}
	return place{}, luavm.Scriptf("section heading `%s` is ambiguous: %d visible sections match it", heading, len(found))
}

// execute runs a contained chain from target (prompt-language §2.10): the
// outer walk does not move; the chain gets a clone of var and starts with no
// reply.
func (u *unit) execute(ctx context.Context, target string, input *string) (string, error) {
	t, err := resolveTarget(u.visible(), target)
	if err != nil {
		return "", err
	}
	if u.frame.depth+1 > MaxDepth {
		return "", &Error{Kind: KindLua, Err: fmt.Errorf("execute recursion exceeded cap of %d", MaxDepth)}
	}
	v, err := u.vm.Var()
	if err != nil {
		return "", err
	}
	fr := u.frame
	fr.depth++
	fr.parent = u.id
	if input != nil {
		fr.args = *input
	}
	end, err := u.r.walk(ctx, fr, t, entry{v: v.Clone(), addressed: true, via: ViaExecute})
	if err != nil {
		return "", err
	}
	return end.text(), nil
}

func (u *unit) listFromSection(target string) ([]string, error) {
	t, err := resolveTarget(u.visible(), target)
	if err != nil {
		return nil, err
	}
	s := t.section()
	if len(s.Items) == 0 {
		return nil, luavm.Scriptf("section `%s` has no pre-parsed items", s.Name)
	}
	return append([]string(nil), s.Items...), nil
}
