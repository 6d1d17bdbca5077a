package transport

// validJSON is encoding/json's Valid, in one tight pass: the grammar of
// RFC 8259 as encoding/json's scanner reads it (strings are not checked for
// UTF-8; a control character in one is refused; nesting deeper than
// maxNestingDepth is refused), without its scanner's step function per
// byte. FuzzValidJSON holds it to json.Valid.
//
// Why: bodyView validates every MCP POST body and the stdio line filter
// every line, and json.Valid spent about 35 instructions a byte: the
// largest part of what a 2026-07-28 call's larger body (its _meta triple)
// cost the server over a stateful one's, and about 3 % of a stdio call
// (docs/benchmarks.md, "The stateless (2026-07-28) path" and "The stdio
// fast lane").
func validJSON(b []byte) bool {
	var buf [64]byte
	stack := buf[:0] // the open '{' and '['
	i := 0
	for {
		// A value.
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		opened := false
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) == maxNestingDepth {
				return false
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			switch {
			case i < len(b) && b[i] == c+2: // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
			case c == '{':
				i = validKey(b, i)
				opened = true
			default:
				opened = true
			}
		case '"':
			i = validString(b, i)
		case 't':
			i = validLiteral(b, i, "true")
		case 'f':
			i = validLiteral(b, i, "false")
		case 'n':
			i = validLiteral(b, i, "null")
		default:
			i = validNumber(b, i)
		}
		if i < 0 {
			return false
		}
		if opened {
			continue
		}
		// After a value: close what ends here, then the next element or
		// member, or the end.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i++
			if top == '{' {
				if i = validKey(b, skipSpace(b, i)); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// maxNestingDepth is encoding/json's scanner limit on nested objects and
// arrays (scanner.go).
const maxNestingDepth = 10000

// validKey checks a member's name and colon at b[i] and returns the index
// after the colon; -1 when they are not there.
func validKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return i + 1
}

// validString checks the string starting at b[i] (a quote) and returns the
// index after it; -1 when it is not a JSON string.
func validString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// validLiteral checks that lit is at b[i] and returns the index after it.
func validLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validNumber checks the number starting at b[i] and returns the index
// after it; -1 when there is none.
func validNumber(b []byte, i int) int {
	digits := func(i int) int {
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(i + 1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = digits(i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = digits(i)
	}
	return i
}
