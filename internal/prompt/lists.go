package prompt

import (
	"fmt"
	"strings"
)

// listItems returns the items of a list section: prose whose every non-blank
// line is a `- `, `* `, `N. ` or `N) ` item. Anything else is not a list and
// yields nil; a list with an empty item is an error, since list_from_section
// would hand an empty string to the caller. The error's Line is relative to
// the prose (1 = its first line).
func listItems(section, prose string) ([]string, *ParseError) {
	var items []string
	emptyAt := 0
	n := 0
	for line := range strings.SplitSeq(prose, "\n") {
		n++
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		item, ok := listMarker(line)
		if !ok {
			return nil, nil
		}
		if item == "" && emptyAt == 0 {
			emptyAt = n
		}
		items = append(items, item)
	}
	if emptyAt > 0 {
		return nil, &ParseError{Kind: KindList, Line: emptyAt,
			Msg: fmt.Sprintf("empty bullet item in list section `%s`", section)}
	}
	return items, nil
}

// listMarker reports whether a trimmed line starts with a list marker, and
// the item text after it. A marker must be followed by a space or end the
// line, so "-x" and "1.5 apples" are ordinary text.
func listMarker(line string) (string, bool) {
	rest := ""
	switch {
	case line[0] == '-' || line[0] == '*':
		rest = line[1:]
	default:
		n := 0
		for n < len(line) && line[n] >= '0' && line[n] <= '9' {
			n++
		}
		if n == 0 || n == len(line) || (line[n] != '.' && line[n] != ')') {
			return "", false
		}
		rest = line[n+1:]
	}
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	return strings.TrimSpace(rest), true
}
