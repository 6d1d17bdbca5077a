package gateway

import (
	"encoding/json"
	"strconv"
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

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens}
}

// wireUsage keeps the two counts raw, so one count in a shape we cannot read
// does not lose the other; the *_details objects are skipped unread.
type wireUsage struct {
	PromptTokens     json.RawMessage `json:"prompt_tokens"`
	CompletionTokens json.RawMessage `json:"completion_tokens"`
}

// parseUsage reads a reply's `usage` value (nil when absent). Anything but
// an object gives the zero Usage.
func parseUsage(raw json.RawMessage) Usage {
	if jsonKind(raw) != '{' {
		return Usage{}
	}
	var w wireUsage
	if json.Unmarshal(raw, &w) != nil {
		return Usage{}
	}
	return Usage{PromptTokens: tokenCount(w.PromptTokens), CompletionTokens: tokenCount(w.CompletionTokens)}
}

// replyUsage is parseUsage for a whole reply body, for the replies
// parseChat refuses after the server already spent the tokens (an empty
// reply, a malformed tool call). A body that is not a JSON object gives 0.
func replyUsage(body []byte) Usage {
	if jsonKind(body) != '{' {
		return Usage{}
	}
	var top struct {
		Usage json.RawMessage `json:"usage"`
	}
	if json.Unmarshal(body, &top) != nil {
		return Usage{}
	}
	return parseUsage(top.Usage)
}

// tokenCount reads one count: a non-negative JSON integer that fits an int.
// Strings, fractions, exponents, negatives and nulls are unknown, so 0.
func tokenCount(raw json.RawMessage) int {
	if len(raw) == 0 || raw[0] < '0' || raw[0] > '9' {
		return 0
	}
	n, err := strconv.ParseInt(string(raw), 10, 0)
	if err != nil {
		return 0
	}
	return int(n)
}
