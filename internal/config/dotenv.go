package config

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// EnvFilePath is the env file that belongs to the configuration at
// configPath: the same path with its extension replaced by "env"
// (prompts.toml → prompts.env, dir/my.cfg.toml → dir/my.cfg.env,
// cfg → cfg.env). A leading dot does not start an extension (.prompts →
// .prompts.env), matching how the reference names it.
func EnvFilePath(configPath string) string {
	dir, name := filepath.Split(configPath)
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	return dir + name + ".env"
}

// readEnvFile loads the env file at path into a map, never failing: a missing
// file is an empty map, and an unreadable or malformed one is ignored whole
// with a warning (mcp-server §2.6). The warning never carries a line of the
// file, which may hold a secret. The process environment is only read (for
// $VAR substitution), never written.
func readEnvFile(path string, lookup LookupFunc, logger *slog.Logger) map[string]string {
	data, err := readCapped(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}
	}
	if err != nil {
		logger.Warn("ignoring env file that could not be read", "path", path, "error", err)
		return map[string]string{}
	}
	vars, badLine, ok := parseEnv(string(data), lookup)
	if !ok {
		logger.Warn("ignoring env file that did not parse", "path", path, "line_index", badLine)
		return map[string]string{}
	}
	return vars
}

// readCapped reads a whole file of at most maxConfigBytes.
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readLimited(f)
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigBytes {
		return nil, errors.New("the file exceeds the 4194304-byte limit")
	}
	return data, nil
}

// parseEnv parses dotenv text with dotenvy 0.15's rules: KEY=VALUE lines,
// an optional "export " prefix, # comments (whole lines, or after
// whitespace), 'single quotes' taken literally, "double quotes" with
// \\ \' \" \$ \n and \<space> escapes, quoted values spanning lines, and
// $NAME / ${NAME} substitution (outside single quotes) from lookup first,
// then from earlier lines, else empty. On a malformed line it returns ok
// false and the 1-based line number the bad entry starts on.
func parseEnv(text string, lookup LookupFunc) (vars map[string]string, badLine int, ok bool) {
	vars = map[string]string{}
	line := 1
	for text != "" {
		entry, rest, consumed, closed := nextEnvEntry(text)
		if !closed {
			return nil, line, false
		}
		if !parseEnvEntry(entry, vars, lookup) {
			return nil, line, false
		}
		line += consumed
		text = rest
	}
	return vars, 0, true
}

// quoteState tracks, across physical lines, whether an entry is still
// inside a quoted value (and so continues on the next line).
type quoteState int

const (
	qsComplete quoteState = iota
	qsSpace
	qsEscape
	qsWeak
	qsWeakEscape
	qsStrong
)

// nextEnvEntry cuts one logical entry off text: a physical line, or several
// when a quote stays open across the newline. It strips the line ending and
// a trailing comment that follows whitespace. consumed is the number of
// physical lines taken; closed is false when the text ends inside a quote.
func nextEnvEntry(text string) (entry, rest string, consumed int, closed bool) {
	state := qsComplete
	start := 0
	for {
		nl := strings.IndexByte(text[start:], '\n')
		var phys string
		if nl < 0 {
			phys = text[start:]
		} else {
			phys = text[start : start+nl+1]
		}
		consumed++
		if strings.HasPrefix(strings.TrimLeftFunc(text[:start+len(phys)], unicode.IsSpace), "#") {
			return "", text[start+len(phys):], consumed, true
		}
		cut := -1
		for i, c := range phys {
			switch state {
			case qsSpace:
				switch c {
				case '#':
					cut = i
				case '\\':
					state = qsEscape
				case '"':
					state = qsWeak
				case '\'':
					state = qsStrong
				default:
					state = qsComplete
				}
			case qsEscape:
				state = qsComplete
			case qsComplete:
				switch {
				case c == '\\':
					state = qsEscape
				case c == '"':
					state = qsWeak
				case c == '\'':
					state = qsStrong
				case c != '\n' && c != '\r' && unicode.IsSpace(c):
					state = qsSpace
				}
			case qsWeak:
				switch c {
				case '\\':
					state = qsWeakEscape
				case '"':
					state = qsComplete
				}
			case qsWeakEscape:
				state = qsWeak
			case qsStrong:
				if c == '\'' {
					state = qsComplete
				}
			}
			if cut >= 0 {
				break
			}
		}
		end := start + len(phys)
		if cut >= 0 {
			return text[:start+cut], text[end:], consumed, true
		}
		if state == qsComplete || state == qsSpace {
			entry = strings.TrimSuffix(strings.TrimSuffix(text[:end], "\n"), "\r")
			return entry, text[end:], consumed, true
		}
		if nl < 0 {
			return "", "", consumed, false
		}
		start = end
	}
}

// parseEnvEntry parses one logical entry into vars; false means malformed.
func parseEnvEntry(entry string, vars map[string]string, lookup LookupFunc) bool {
	s := strings.TrimLeftFunc(entry, unicode.IsSpace)
	if s == "" || s[0] == '#' {
		return true
	}
	key, s, ok := envKey(s)
	if !ok {
		return false
	}
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if key == "export" && !strings.HasPrefix(s, "=") {
		if key, s, ok = envKey(s); !ok {
			return false
		}
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if !strings.HasPrefix(s, "=") {
		return false
	}
	s = strings.TrimLeftFunc(s[1:], unicode.IsSpace)
	if s == "" || s[0] == '#' {
		vars[key] = ""
		return true
	}
	value, ok := envValue(s, vars, lookup)
	if !ok {
		return false
	}
	vars[key] = value
	return true
}

// envKey reads a key: an ASCII letter or _ then letters, digits, _ and '.'.
func envKey(s string) (key, rest string, ok bool) {
	if s == "" || !(isASCIILetter(s[0]) || s[0] == '_') {
		return "", s, false
	}
	i := 1
	for i < len(s) && (isASCIILetter(s[i]) || isDigit(s[i]) || s[i] == '_' || s[i] == '.') {
		i++
	}
	return s[:i], s[i:], true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isVarNameRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// envValue decodes a value: quotes, escapes, substitution, and the rule
// that unquoted whitespace may only be followed by more whitespace or a
// comment ("k=v #note" is fine, "k=v w" is not).
func envValue(s string, vars map[string]string, lookup LookupFunc) (string, bool) {
	var out strings.Builder
	var weak, strong, escaped, expectEnd bool
	substitute := func(name string) {
		if v, ok := lookup(name); ok {
			out.WriteString(v)
			return
		}
		out.WriteString(vars[name])
	}
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		c := runes[i]
		switch {
		case expectEnd:
			if c == '#' {
				return out.String(), true
			}
			if c != ' ' && c != '\t' {
				return "", false
			}
		case escaped:
			switch c {
			case '\\', '\'', '"', '$', ' ':
				out.WriteRune(c)
			case 'n':
				out.WriteByte('\n')
			default:
				return "", false
			}
			escaped = false
		case strong:
			if c == '\'' {
				strong = false
			} else {
				out.WriteRune(c)
			}
		case c == '$':
			if i+1 < len(runes) && runes[i+1] == '{' {
				end := -1
				for j := i + 2; j < len(runes); j++ {
					if runes[j] == '}' {
						end = j
						break
					}
				}
				if end < 0 {
					return "", false
				}
				substitute(string(runes[i+2 : end]))
				i = end
				continue
			}
			j := i + 1
			for j < len(runes) && isVarNameRune(runes[j]) {
				j++
			}
			if j == i+1 {
				// A "$" not followed by a name stays literal.
				out.WriteByte('$')
				continue
			}
			substitute(string(runes[i+1 : j]))
			i = j - 1
		case weak:
			switch c {
			case '"':
				weak = false
			case '\\':
				escaped = true
			default:
				out.WriteRune(c)
			}
		case c == '\'':
			strong = true
		case c == '"':
			weak = true
		case c == '\\':
			escaped = true
		case c == ' ' || c == '\t':
			expectEnd = true
		default:
			out.WriteRune(c)
		}
	}
	if weak || strong {
		return "", false
	}
	return out.String(), true
}
