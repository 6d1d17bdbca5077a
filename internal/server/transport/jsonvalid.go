package transport

// validJSON reports whether b is exactly one JSON value with only
// whitespace around it, as encoding/json's Valid does (the same grammar,
// invalid UTF-8 in strings accepted, at most maxValidDepth objects and
// arrays nested). It is the stdio line filter's check of every line:
// json.Valid's scanner steps through a function value per byte, about 30
// instructions a byte of a tools/call line and 3 % of a Lua-only
// run_prompt's instructions over stdio (docs/benchmarks.md, "The stdio
// fast lane"); this loop spends a few on each byte of a string, which is
// most of a line. FuzzValidJSON holds it to json.Valid.
func validJSON(b []byte) bool {
	// inObject has bit d set when the container at depth d (1-based) is
	// an object: the nesting is kept without allocating.
	var inObject [maxValidDepth/64 + 1]uint64
	depth := 0
	i := skipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			depth++
			if depth > maxValidDepth {
				return false
			}
			word, bit := depth/64, uint64(1)<<(depth%64)
			i = skipSpace(b, i+1)
			if c == '{' {
				inObject[word] |= bit
				if i < len(b) && b[i] == '}' {
					i++
					depth--
					break
				}
				if i = objectKey(b, i); i < 0 {
					return false
				}
				continue
			}
			inObject[word] &^= bit
			if i < len(b) && b[i] == ']' {
				i++
				depth--
				break
			}
			continue
		case c == '"':
			if i = skipValidString(b, i); i < 0 {
				return false
			}
		case c == 't':
			if !hasWord(b, i, "true") {
				return false
			}
			i += len("true")
		case c == 'f':
			if !hasWord(b, i, "false") {
				return false
			}
			i += len("false")
		case c == 'n':
			if !hasWord(b, i, "null") {
				return false
			}
			i += len("null")
		default:
			if i = skipNumber(b, i); i < 0 {
				return false
			}
		}
		// A value ended at b[i]: close containers, or go to the next
		// member or element.
		for {
			i = skipSpace(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			object := inObject[depth/64]&(uint64(1)<<(depth%64)) != 0
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if object {
					if i = objectKey(b, i); i < 0 {
						return false
					}
				}
				break
			}
			if (object && b[i] != '}') || (!object && b[i] != ']') {
				return false
			}
			i++
			depth--
		}
	}
}

// maxValidDepth is encoding/json's nesting limit (scanner.go,
// maxNestingDepth): a deeper value is not valid to it.
const maxValidDepth = 10000

// objectKey checks `"key" :` at b[i] and returns the index of the value
// after it (spaces skipped), or -1.
func objectKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = skipValidString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// skipValidString returns the index past the string starting at b[i] (a
// quote), or -1 when it is not a valid JSON string: a control character,
// an unknown escape, a \u without four hex digits, or no closing quote.
func skipValidString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c < ' ':
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return -1
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// hasWord reports whether b holds word at i.
func hasWord(b []byte, i int, word string) bool {
	return len(b)-i >= len(word) && string(b[i:i+len(word)]) == word
}

// skipNumber returns the index past the JSON number at b[i], or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
