package engine

import (
	"fmt"
	"strings"

	"github.com/promptforge-go/promptforge/internal/luavm"
	"github.com/promptforge-go/promptforge/internal/prompt"
)

// walkEnd is how a walk ended: a scalar return (value), or the slice ran
// out with the rolling reply.
type walkEnd struct {
	returned bool
	value    string
	reply    *string
}

// flow is how one section entry ended.
type flow struct {
	returned bool
	value    string
	reply    *string
	jump     *jumpTarget
}

// jumpTarget is a resolved heading within a section's visible set: a
// sibling (index into the section's slice) or a child (index into its
// children).
type jumpTarget struct {
	child bool
	index int
}

// walk runs slice from start (§3.3). parent owns slice (nil at the top).
// addressed makes the first section run even when it is off-walk. Sections
// of one walk share v; a jump to a child starts a child walk that shares it
// too.
func (r *run) walk(slice []*prompt.Section, parent *prompt.Section, start int, reply *string, addressed bool, depth int, v *luavm.Var, args string) (walkEnd, error) {
	for i := start; i < len(slice); {
		s := slice[i]
		if !addressed && s.OffWalk {
			i++
			continue
		}
		addressed = false
		u := r.newUnit(s, slice, i, depth, args)
		f, err := u.runSection(reply, v)
		if err != nil {
			return walkEnd{}, err
		}
		switch {
		case f.returned:
			return walkEnd{returned: true, value: f.value}, nil
		case f.jump == nil:
			reply = f.reply
			i++
		case f.jump.child:
			reply = f.reply
			end, err := r.walk(s.Children, s, f.jump.index, reply, true, depth, v, args)
			if err != nil {
				return walkEnd{}, err
			}
			if end.returned {
				return end, nil
			}
			reply = end.reply
			i++
		default:
			reply = f.reply
			i = f.jump.index
			addressed = true
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

// resolve finds target in the visible set of slice[idx]: its siblings
// (without itself) and its own children.
func resolveTarget(slice []*prompt.Section, idx int, target string) (jumpTarget, *prompt.Section, error) {
	level, name, err := parseHeading(target)
	if err != nil {
		return jumpTarget{}, nil, err
	}
	self := slice[idx]
	var found []jumpTarget
	for j, s := range slice {
		if j != idx && s.Level == level && s.Name == name {
			found = append(found, jumpTarget{index: j})
		}
	}
	for k, c := range self.Children {
		if c.Level == level && c.Name == name {
			found = append(found, jumpTarget{child: true, index: k})
		}
	}
	heading := strings.Repeat("#", level) + " " + name
	switch len(found) {
	case 1:
		t := found[0]
		if t.child {
			return t, self.Children[t.index], nil
		}
		return t, slice[t.index], nil
	case 0:
		var avail []string
		for j, s := range slice {
			if j != idx {
				avail = append(avail, strings.Repeat("#", s.Level)+" "+s.Name)
			}
		}
		for _, c := range self.Children {
			avail = append(avail, strings.Repeat("#", c.Level)+" "+c.Name)
		}
		return jumpTarget{}, nil, luavm.Scriptf("section heading `%s` not found; available sections: %s", heading, strings.Join(avail, ", "))
	}
	return jumpTarget{}, nil, luavm.Scriptf("section heading `%s` is ambiguous: %d visible sections match it", heading, len(found))
}

// execute runs a contained chain from target (§2.10): the outer walk does
// not move; the chain gets a clone of var and starts with no reply.
func (u *unit) execute(target string, input *string) (string, error) {
	if u.sec == nil {
		return "", luavm.Scriptf("execute is only available in sections (## headings); H1 runs before sections exist")
	}
	t, _, err := resolveTarget(u.slice, u.idx, target)
	if err != nil {
		return "", err
	}
	if u.depth+1 > MaxDepth {
		return "", &Error{Kind: Lua, Err: fmt.Errorf("execute recursion exceeded cap of %d", MaxDepth)}
	}
	v, err := u.vm.Var()
	if err != nil {
		return "", err
	}
	args := u.args
	if input != nil {
		args = *input
	}
	slice, parent := u.slice, u.parent
	if t.child {
		slice, parent = u.sec.Children, u.sec
	}
	end, err := u.r.walk(slice, parent, t.index, nil, true, u.depth+1, v.Clone(), args)
	if err != nil {
		return "", err
	}
	if end.returned {
		return end.value, nil
	}
	if end.reply != nil {
		return *end.reply, nil
	}
	return "", nil
}

func (u *unit) listFromSection(target string) ([]string, error) {
	if u.sec == nil {
		return nil, luavm.Scriptf("list_from_section is only available in sections (## headings); H1 runs before sections exist")
	}
	_, s, err := resolveTarget(u.slice, u.idx, target)
	if err != nil {
		return nil, err
	}
	if len(s.Items) == 0 {
		return nil, luavm.Scriptf("section `%s` has no pre-parsed items", s.Name)
	}
	return append([]string(nil), s.Items...), nil
}
