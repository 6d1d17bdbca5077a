package prompt

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

var templateKindNames = [...]string{
	TplUnclosed:         "Unclosed",
	TplBadPath:          "BadPath",
	TplEmptySegment:     "EmptySegment",
	TplUnknownNamespace: "UnknownNamespace",
	TplNotATable:        "NotATable",
	TplMissingKey:       "MissingKey",
	TplNullValue:        "NullValue",
	TplNilReply:         "NilReply",
	TplNilItem:          "NilItem",
	TplSerialize:        "Serialize",
	TplTooLarge:         "TooLarge",
}

// String returns the kind's name as it appears in error text.
func (k TemplateErrorKind) String() string {
	if int(k) < len(templateKindNames) && templateKindNames[k] != "" {
		return templateKindNames[k]
	}
	return fmt.Sprintf("TemplateErrorKind(%d)", uint8(k))
}

// previewLimit caps how much of a path (or of unclosed text) an error
// message quotes, so a runaway placeholder cannot flood a log line.
const previewLimit = 80

// Namespaces whose value is always a string, so a dotted path is an error
// whatever the run holds.
var stringNamespaces = map[string]bool{"args": true, "reply": true, "item": true}

func substitute(text string, resolve Resolver, maxBytes int) (string, error) {
	if !strings.ContainsAny(text, "{\\") {
		return text, nil
	}
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\\' && i+1 < len(text) && (text[i+1] == '{' || text[i+1] == '}' || text[i+1] == '\\'):
			b.WriteByte(text[i+1])
			i += 2
		case c == '{' && strings.HasPrefix(text[i:], "{{"):
			closeAt := strings.Index(text[i+2:], "}}")
			if closeAt < 0 {
				return "", &TemplateError{Kind: TplUnclosed, Offset: i,
					Msg: fmt.Sprintf("unclosed placeholder {{%s: no }} follows it", Preview(text[i+2:]))}
			}
			path, terr := ParsePath(text[i+2 : i+2+closeAt])
			if terr != nil {
				terr.Offset = i
				return "", terr
			}
			val, err := resolve(path)
			if err != nil {
				return "", placeholderError(err, i)
			}
			// Checked before writing, so nothing oversized is built; the
			// literal text in between is the prompt's own, bounded by its
			// file, and is checked once at the end.
			if maxBytes > 0 && b.Len()+len(val) > maxBytes {
				return "", tooLarge(maxBytes, i, "{{ "+Preview(path.Raw)+" }}")
			}
			b.WriteString(val)
			i += 2 + closeAt + 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	if maxBytes > 0 && b.Len() > maxBytes {
		return "", tooLarge(maxBytes, len(text), "the end of the block")
	}
	return b.String(), nil
}

func tooLarge(maxBytes, offset int, where string) *TemplateError {
	return &TemplateError{Kind: TplTooLarge, Offset: offset, Msg: fmt.Sprintf(
		"the rendered block would exceed the %d-byte string limit at %s; render less (a summary instead of the whole value, or the value once)",
		maxBytes, where)}
}

// placeholderError gives a resolver's error the placeholder's offset,
// copying a *TemplateError so the resolver's value is never mutated.
func placeholderError(err error, offset int) *TemplateError {
	var te *TemplateError
	if errors.As(err, &te) {
		out := *te
		out.Offset = offset
		return &out
	}
	return &TemplateError{Kind: TplSerialize, Offset: offset, Msg: err.Error(), Err: err}
}

// ParsePath validates the inside of a {{ }} placeholder (surrounding
// whitespace allowed) against the path grammar: dot-separated, non-empty,
// unpadded segments; `var` and `sys` need a key; `args`, `reply` and `item`
// take none. The returned error has no Offset.
func ParsePath(inside string) (Path, *TemplateError) {
	raw := strings.TrimSpace(inside)
	p := Path{Raw: raw}
	if raw == "" {
		return p, &TemplateError{Kind: TplBadPath,
			Msg: "bad path: the placeholder {{ }} is empty; name a value such as {{ args }} or {{ var.key }}"}
	}
	segs := strings.Split(raw, ".")
	for _, s := range segs {
		// A segment of spaces is empty, not padded: "var. .x" has
		// nothing between two dots, as the reference reports it.
		if strings.TrimSpace(s) == "" {
			return p, &TemplateError{Kind: TplEmptySegment,
				Msg: fmt.Sprintf("empty segment in {{ %s }}: every dot must separate two names", Preview(raw))}
		}
		if strings.TrimSpace(s) != s {
			return p, &TemplateError{Kind: TplBadPath,
				Msg: fmt.Sprintf("bad path {{ %s }}: segment %q has surrounding whitespace", Preview(raw), Preview(s))}
		}
	}
	p.Head, p.Keys = segs[0], segs[1:]
	switch {
	case len(p.Keys) == 0 && (p.Head == "var" || p.Head == "sys"):
		return p, &TemplateError{Kind: TplBadPath,
			Msg: fmt.Sprintf("bad path {{ %s }}: name a field, e.g. {{ %s.name }}", p.Head, p.Head)}
	case len(p.Keys) > 0 && stringNamespaces[p.Head]:
		return p, &TemplateError{Kind: TplNotATable,
			Msg: fmt.Sprintf("%s is a string, not a table", p.Head)}
	}
	return p, nil
}

// Preview quotes untrusted text (a template path, a key an author wrote)
// in an error message: control characters and invalid bytes are escaped
// and the result is capped at 80 characters (prompt-language §1.6). It is
// the one rule for such quotes, so the same mistake reads the same whether
// the parser, the renderer or the Lua runtime reports it.
func Preview(s string) string {
	var b strings.Builder
	n := 0
	for i, r := range s {
		if n == previewLimit {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
