package gateway

import (
	"encoding/json"
)

// Usage is the token count a chat reply reports in its `usage` object. A
// count the server did not send, or sent in a shape we cannot read, is 0:
// usage is bookkeeping, so a server that omits it (or a proxy that mangles
// it) never fails a run. llama.cpp also sends `timings` with the same counts;
// it always sends `usage` beside them, so timings are not read.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Wire names of the two counts.
const (
	keyPromptTokens     = "prompt_tokens"
	keyCompletionTokens = "completion_tokens"
)

// parseUsage reads the two counts of a reply's `usage` value (nil when
// absent). Anything but an object gives the zero Usage, and a count that is
// not a non-negative JSON integer reads as 0 without touching the other.
//
// It runs on every model turn over bytes already validated (parseChat
// validates the body once, scan.go), so it scans them in place
// rather than decoding them a second time: that decode cost five
// allocations a turn. A key written with escapes, which no server sends,
// takes the decoding path, decodeUsage, which defines the result; a fuzz
// test holds the two to the same answer.
func parseUsage(raw []byte) Usage {
	i := skipJSONSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return Usage{}
	}
	var u Usage
	for i++; ; i++ {
		i = skipJSONSpace(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			return u // the closing brace (or an empty object)
		}
		key, end, escaped := scanString(raw, i)
		if escaped {
			return decodeUsage(raw)
		}
		if i = skipJSONSpace(raw, end); i >= len(raw) || raw[i] != ':' {
			return Usage{}
		}
		start := skipJSONSpace(raw, i+1)
		if i = skipValue(raw, start); i < 0 {
			return Usage{}
		}
		switch string(key) {
		case keyPromptTokens:
			u.PromptTokens = tokenCount(raw[start:i])
		case keyCompletionTokens:
			u.CompletionTokens = tokenCount(raw[start:i])
		}
		if i = skipJSONSpace(raw, i); i >= len(raw) || raw[i] != ',' {
			return u
		}
	}
}

// decodeUsage is parseUsage by encoding/json, for keys with escapes and as
// the reference the fuzz test checks the scan against. A duplicate key
// takes its last value, as in the scan.
func decodeUsage(raw []byte) Usage {
	var fields map[string]json.RawMessage
	if jsonKind(raw) != '{' || json.Unmarshal(raw, &fields) != nil {
		return Usage{}
	}
	return Usage{PromptTokens: tokenCount(fields[keyPromptTokens]), CompletionTokens: tokenCount(fields[keyCompletionTokens])}
}

// replyUsage is parseUsage for a whole reply body, for the replies
// parseChat refuses after the server already spent the tokens (an empty
// reply, a malformed tool call). A body that is not a JSON object gives 0.
// It runs only on failures, so it decodes plainly.
func replyUsage(body []byte) Usage {
	var top struct {
		Usage json.RawMessage `json:"usage"`
	}
	if jsonKind(body) != '{' || json.Unmarshal(body, &top) != nil {
		return Usage{}
	}
	return parseUsage(top.Usage)
}

// tokenCount reads one count: a JSON integer literal of digits only that
// fits an int. Negatives, fractions, exponents, strings and null are
// unknown, so 0.
func tokenCount(lit []byte) int {
	if len(lit) == 0 {
		return 0
	}
	n := 0
	for _, b := range lit {
		if b < '0' || b > '9' {
			return 0
		}
		d := int(b - '0')
		if n > (maxInt-d)/10 {
			return 0
		}
		n = n*10 + d
	}
	return n
}

const maxInt = int(^uint(0) >> 1)

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// scanString reads the JSON string starting at b[i] == '"': its raw
// content, the index after its closing quote, and whether it holds an
// escape (the content is then still escaped). An unterminated string ends
// at len(b).
func scanString(b []byte, i int) (content []byte, end int, escaped bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return b[i+1 : j], j + 1, escaped
		}
	}
	return b[min(i+1, len(b)):], len(b), escaped
}

// skipValue returns the index just after the JSON value starting at b[i],
// or -1 when there is none.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		_, end, _ := scanString(b, i)
		return end
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				_, end, _ := scanString(b, i)
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	case ',', '}', ']', ':':
		return -1
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}
