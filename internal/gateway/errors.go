package gateway

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/redact"
)

// Kind classifies an *Error so callers can decide what to do without
// parsing messages.
type Kind uint8

const (
	// KindTransport: the gateway could not be reached, the connection
	// broke, or the request timed out (see Error.Timeout).
	KindTransport Kind = iota + 1
	// KindStatus: the gateway answered with a non-2xx status.
	KindStatus
	// KindMalformed: a 2xx reply that breaks the contract (not JSON, wrong
	// shape, oversize, bad tool-call arguments).
	KindMalformed
	// KindEmptyReply: a well-formed reply with no text and no tool calls.
	KindEmptyReply
	// KindConfig: the client configuration or the request itself is
	// invalid; nothing was sent.
	KindConfig
	// KindCancelled: the caller's context ended first; the error wraps
	// ctx.Err().
	KindCancelled
	// KindDisabled: the client was built by NewDisabled; no gateway is
	// configured.
	KindDisabled
	// KindRefused: a well-formed reply in which the model declined to
	// answer (OpenAI's message.refusal); the message quotes its text.
	KindRefused
)

func (k Kind) String() string {
	switch k {
	case KindTransport:
		return "transport"
	case KindStatus:
		return "status"
	case KindMalformed:
		return "malformed"
	case KindEmptyReply:
		return "empty reply"
	case KindConfig:
		return "config"
	case KindCancelled:
		return "canceled"
	case KindDisabled:
		return "disabled"
	case KindRefused:
		return "refused"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ErrNotConfigured is wrapped by the errors that mean "no gateway was
// configured at all": OptionsFromEnv with neither variable set, and every
// call on a NewDisabled client.
var ErrNotConfigured = errors.New("no gateway configured")

// Error is every failure the client returns. Error() says what failed and
// what to do; it never contains the API key. A KindStatus message quotes
// the model server's own reason (error.message, a string error, or detail,
// redacted and capped; see upstreamReason), because that is often the only
// place the real cause is named ("try pulling it first", "exceeds the
// available context size"); Search's quotes the whole sanitized body,
// because the model reading a failed search needs the backend's reason.
type Error struct {
	Kind Kind
	// Op is the request, e.g. "POST /chat/completions"; "" when nothing
	// was sent.
	Op string
	// Status is the HTTP status for KindStatus (and for KindMalformed
	// replies, which are 2xx); 0 otherwise.
	Status int
	// FinishReason is the reply's finish_reason for KindEmptyReply ("" if
	// the backend sent none): the engine treats an empty "stop" after a
	// tool call as a clean end.
	FinishReason string
	// ReasoningIgnored reports, for KindEmptyReply, that the reply held
	// reasoning text but no answer.
	ReasoningIgnored bool
	// Usage is what the body of a refused reply (an empty reply, a
	// malformed tool call) reported spending: the server did the work, so
	// the run's token count includes it. Zero when no body carried one.
	Usage Usage
	// RequestJSON and ResponseJSON are the raw bodies when they exist,
	// for debug capture; they are never part of Error().
	RequestJSON, ResponseJSON []byte

	msg     string
	body    string
	timeout bool
	err     error
	// reading marks a transport failure while reading the reply body
	// (rather than sending the request); oversize marks a 2xx body over
	// the exchange's cap. Search words its messages by them.
	reading, oversize bool
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause: ctx.Err() for KindCancelled, the transport
// error for KindTransport, ErrNotConfigured where it applies.
func (e *Error) Unwrap() error { return e.err }

// Retryable reports whether the same request may succeed if sent again:
// transport failures (including timeouts), malformed replies, 5xx, and
// 429 (rate limited).
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindTransport, KindMalformed:
		return true
	case KindStatus:
		return e.Status >= 500 || e.Status == 429
	}
	return false
}

// Timeout reports whether the request ran past the client's timeout.
func (e *Error) Timeout() bool { return e.timeout }

// Body is the start of a non-2xx reply body, control characters escaped,
// at most 2,000 characters; "" for other kinds. Only the server's reason
// goes into Error(); the whole body is kept out because gateways may echo
// request content: show it only where that is acceptable (debug logs).
func (e *Error) Body() string { return e.body }

const maxBodyChars = 2000

// escapeBody makes an untrusted body safe to print on one line: invalid
// UTF-8 becomes U+FFFD, control and bidi-format characters are escaped,
// and the result is at most maxBodyChars characters, ending in "…" when
// cut (never inside an escape).
func escapeBody(b []byte) string {
	var sb strings.Builder
	chars, fit := 0, 0 // fit: bytes written while chars <= maxBodyChars-1
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		var s string
		switch {
		case r == '\n':
			s = `\n`
		case r == '\r':
			s = `\r`
		case r == '\t':
			s = `\t`
		case r == '\\':
			s = `\\`
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			s = `\u` + leftPad(strconv.FormatInt(int64(r), 16), 4)
		default:
			s = string(r)
		}
		chars += utf8.RuneCountInString(s)
		if chars > maxBodyChars {
			return sb.String()[:fit] + "…"
		}
		sb.WriteString(s)
		if chars <= maxBodyChars-1 {
			fit = sb.Len()
		}
	}
	return sb.String()
}

func leftPad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return strings.Repeat("0", n-len(s)) + s
}

func configError(msg string) *Error {
	return &Error{Kind: KindConfig, msg: msg}
}

func malformed(op string, status int, detail string) *Error {
	return &Error{
		Kind:   KindMalformed,
		Op:     op,
		Status: status,
		msg:    "gateway sent a malformed reply to " + op + ": " + detail + "; check that the URL points at an OpenAI-compatible gateway",
	}
}

// statusError words a non-2xx reply: the status, what to check, and the
// server's own reason when its body has one (key is the API key, which is
// cut out of it).
func statusError(op string, status int, body []byte, key string) *Error {
	msg := "gateway returned " + strconv.Itoa(status) + " for " + op + ": " + statusAdvice(status)
	if reason := upstreamReason(body, key); reason != "" {
		msg += `: the model server said: "` + reason + `"`
	}
	return &Error{
		Kind:   KindStatus,
		Op:     op,
		Status: status,
		msg:    msg,
		body:   escapeBody(body),
	}
}

// maxReasonChars caps the server's reason in a message: enough for every
// recorded server's sentence, short enough for one log line.
const maxReasonChars = 300

// upstreamReason extracts the reason from an OpenAI-shaped error body:
// error.message (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM), a string
// error, or a string detail (FastAPI servers). The text is the server's,
// so it may echo what it was sent: the API key, any bearer token and the
// userinfo and query of URLs are cut out, control characters and
// whitespace runs collapse, and it is capped at maxReasonChars; quotes
// are kept, so the text can be searched for as the server wrote it. ""
// when the body has no reason.
func upstreamReason(body []byte, key string) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return ""
	}
	var reason string
	if e, ok := top["error"]; ok {
		switch jsonKind(e) {
		case '"':
			_ = json.Unmarshal(e, &reason)
		case '{':
			var obj map[string]json.RawMessage
			if json.Unmarshal(e, &obj) == nil {
				reason, _, _ = optString(obj, "message")
			}
		}
	}
	if strings.TrimSpace(reason) == "" {
		reason, _, _ = optString(top, "detail")
	}
	return redact.Text(redact.Credentials(redact.Secret(reason, key)), maxReasonChars)
}

func statusAdvice(status int) string {
	switch {
	case status == 401 || status == 403:
		return "check the gateway API key"
	case status == 404:
		return "check that the gateway URL is the API root (it usually ends in /v1) and that the model id is served"
	case status == 429:
		return "the gateway is rate limiting; retry later"
	case status >= 400 && status < 500:
		return "the gateway refused the request; check the model id and the request options"
	case status >= 500:
		return "retry later or check the gateway"
	}
	return "unexpected status; check that the URL points at an OpenAI-compatible gateway"
}

func emptyReply(finish string, reasoning bool) *Error {
	msg := "empty model reply"
	switch {
	case reasoning && finish == "length":
		// A thinking model that used its whole output budget before
		// answering (llama.cpp sends an unclosed <think> or only
		// reasoning_content): saying so is what lets the user fix it.
		msg += ": the model spent its output budget reasoning and stopped (finish_reason \"length\") before answering; raise max_tokens, or turn thinking off for this need"
	case reasoning:
		msg += ": reasoning content was present but ignored"
	}
	return &Error{Kind: KindEmptyReply, Op: opChat, Status: 200, FinishReason: finish, ReasoningIgnored: reasoning, msg: msg}
}

// maxRefusalChars caps a refusal quoted in a message.
const maxRefusalChars = 500

func refused(text string) *Error {
	return &Error{Kind: KindRefused, Op: opChat, Status: 200,
		msg: `the model refused: "` + redact.Text(text, maxRefusalChars) + `"; rephrase the prompt or use another model`}
}
