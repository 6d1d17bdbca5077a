package redact

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// URL renders u as scheme://host[:port]/path for messages and logs:
// userinfo, query and fragment can carry tokens, so they never leave.
func URL(u *url.URL) string {
	if u == nil {
		return "(no url)"
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}

// RawURL is URL for text that may not parse (a Location header refused,
// a gateway URL not validated yet). It cuts at the first '?' or '#', drops anything up
// to an '@' in the authority, and escapes control characters.
func RawURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" {
		return URL(u)
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if i := strings.Index(raw, "//"); i >= 0 {
		rest := raw[i+2:]
		end := strings.IndexAny(rest, "/\\")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			raw = raw[:i+2] + rest[at+1:]
		}
	}
	return Text(raw, 200)
}

// Text makes remote-controlled text safe to embed in a message:
// invalid UTF-8 and control characters become spaces, whitespace runs
// collapse, and the result is capped at limit characters (an ellipsis
// marks a cut).
func Text(s string, limit int) string {
	var b strings.Builder
	pendingSpace := false
	n := 0
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				r = ' '
			}
		}
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			pendingSpace = b.Len() > 0
			continue
		}
		need := 1
		if pendingSpace {
			need = 2
		}
		if n+need > limit {
			return b.String() + "…"
		}
		if pendingSpace {
			b.WriteByte(' ')
			pendingSpace = false
		}
		b.WriteRune(r)
		n += need
	}
	return b.String()
}

// The two markers that stand where a credential would have been. They are
// spelled differently on purpose, and both spellings are pinned by tests:
//
//   - Placeholder stands for a credential a value holds but does not show,
//     in a rendering of that value (gateway.Client prints "key: <redacted>").
//   - Echoed replaces a credential found in remote-controlled text, such as
//     an error body in which a misbehaving backend echoed our headers; the
//     brackets read as an edit inside quoted text.
//
// (package secret prints a third, bare "redacted" for a Secret itself:
// that is its documented rendering, mcp-server §2.7.)
const (
	Placeholder = "<redacted>"
	Echoed      = "[redacted]"
)

// Secret returns text with every occurrence of secret replaced by [Echoed].
// An empty secret matches nothing.
func Secret(text, secret string) string {
	if secret == "" {
		return text
	}
	return strings.ReplaceAll(text, secret, Echoed)
}

// Credentials cuts the credentials a remote server may echo into its own
// error text: the token after "Bearer " (any case) becomes [Echoed], and
// every URL in the text is rewritten as [RawURL] renders it, without
// userinfo, query or fragment. Other text is left as it is.
func Credentials(text string) string {
	return urls(bearers(text))
}

func bearers(text string) string {
	const word = "bearer "
	var b strings.Builder
	for {
		i := strings.Index(strings.ToLower(text), word)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i+len(word)])
		rest := text[i+len(word):]
		end := strings.IndexFunc(rest, unicode.IsSpace)
		if end < 0 {
			end = len(rest)
		}
		if end > 0 {
			b.WriteString(Echoed)
		}
		text = rest[end:]
	}
}

func urls(text string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, "://")
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeByte(text[start-1]) {
			start--
		}
		end := i + 3
		for end < len(text) && !urlStop(text[end]) {
			end++
		}
		b.WriteString(text[:start])
		if start == i {
			// "://" with no scheme before it is not a URL.
			b.WriteString(text[i:end])
		} else {
			b.WriteString(RawURL(text[start:end]))
		}
		text = text[end:]
	}
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// urlStop ends a URL found in prose: whitespace and the quotes and
// brackets that usually enclose one.
func urlStop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>', '(', ')', '[', ']', '{', '}':
		return true
	}
	return false
}
