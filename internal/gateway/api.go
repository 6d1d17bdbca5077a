package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/promptforge-go/promptforge/internal/secret"
)

// Options locates a gateway: any OpenAI-shaped server whose API root
// (including /v1) is BaseURL.
type Options struct {
	BaseURL string        // http(s)://host[:port]/v1; no userinfo, query or fragment; trailing / trimmed
	APIKey  secret.Secret // sent as "Authorization: Bearer <key>"
	// Timeout bounds one whole chat request, connect to last body byte
	// (default DefaultTimeout, 120s; prompts.toml sets it as
	// [gateway].request_timeout).
	Timeout time.Duration
	// ModelsTimeout bounds the GET /models request (default
	// DefaultModelsTimeout, 10s) so a host's boot never hangs on a silent
	// gateway (design §3.2). A caller's ctx deadline also applies.
	ModelsTimeout time.Duration
	// EmbeddingsTimeout bounds one POST /embeddings request (default
	// DefaultEmbeddingsTimeout, 30s; prompts.toml sets it as
	// [retrieval].timeout).
	EmbeddingsTimeout time.Duration
	// ThinkingSwitch is how a request's thinking switch is sent to models
	// whose catalog entry names none ("" means
	// ThinkingSwitchTemplateKwargs, what every release before it sent).
	ThinkingSwitch ThinkingSwitch
	// MaxRequestBytes caps a chat request's body (default
	// DefaultMaxRequestBytes; prompts.toml sets it as
	// [limits].max_request_size): a larger request is refused before it
	// is sent, so one prompt cannot build and ship hundreds of megabytes.
	MaxRequestBytes int
	// HTTPClient is used when non-nil (tests, custom transports). Its own
	// Timeout, if any, applies on top of the two above.
	HTTPClient *http.Client
}

// Client speaks the gateway contract. It is safe for concurrent use.
type Client struct {
	base          string // validated, trailing slashes trimmed
	auth          string // "Bearer <key>"; never printed
	key           secret.Secret
	timeout       time.Duration
	modelsTimeout time.Duration
	// embeddingsTimeout bounds one embeddings request.
	embeddingsTimeout time.Duration
	switchDefault     ThinkingSwitch
	maxRequest        int
	http              *http.Client
	// disabled, when non-empty, is why this client refuses every call.
	disabled string
	// searchName is who a search failure names ("" is the gateway at
	// base): a search provider's client sets it.
	searchName string
}

// Thinking is a model's reasoning switch mode from the catalog.
type Thinking string

const (
	ThinkingNever      Thinking = "never"
	ThinkingAlways     Thinking = "always"
	ThinkingSwitchable Thinking = "switchable"
)

// ThinkingSwitch is how a request's thinking switch ([ChatRequest.Thinking])
// goes on the wire: model servers disagree on it, and a key a server does
// not know is ignored or refused, so the switch must be the server's own.
type ThinkingSwitch string

const (
	// ThinkingSwitchTemplateKwargs sends chat_template_kwargs.enable_thinking
	// (vLLM, llama.cpp, SGLang).
	ThinkingSwitchTemplateKwargs ThinkingSwitch = "chat_template_kwargs"
	// ThinkingSwitchReasoningEffort sends reasoning_effort: "medium" for on
	// and "none" for off (Ollama, OpenAI).
	ThinkingSwitchReasoningEffort ThinkingSwitch = "reasoning_effort"
	// ThinkingSwitchNone sends nothing: the model's own default applies.
	ThinkingSwitchNone ThinkingSwitch = "none"
)

// Valid reports whether s is one of the switches ("" is not).
func (s ThinkingSwitch) Valid() bool {
	switch s {
	case ThinkingSwitchTemplateKwargs, ThinkingSwitchReasoningEffort, ThinkingSwitchNone:
		return true
	}
	return false
}

// Dialect is how a model takes tools.
type Dialect string

const (
	DialectOpenAI Dialect = "openai"
	DialectGemma3 Dialect = "gemma3_tool_code"
)

// Model is one usable catalog entry.
type Model struct {
	ID          string
	Description string
	Context     uint32
	Thinking    Thinking
	Dialect     Dialect
	// ThinkingSwitch is how this model's thinking switch is sent; ""
	// takes the client's [Options.ThinkingSwitch].
	ThinkingSwitch ThinkingSwitch
}

// ModelOverride is a [models."<id>"] table from prompts.toml: it fills or
// overrides what the gateway serves (design §3.3). Zero fields are unset.
type ModelOverride struct {
	Description string
	Context     uint32
	Thinking    Thinking
	// Dialect overrides tool_dialect, e.g. for a local server that serves
	// a Gemma 3 model without native tool calling.
	Dialect Dialect
	// ThinkingSwitch sets how the model's thinking switch is sent.
	ThinkingSwitch ThinkingSwitch
}

// SkippedModel is a served id that no source describes fully.
type SkippedModel struct {
	ID     string
	Reason string // e.g. `no description: add [models."llama3"] description = "..."`
}

// UnmatchedOverride is a [models."<id>"] table whose id the gateway does not
// serve, so it has no effect: the commonest first-run mistake is a tag
// ("llama3.1:8b" configured, "llama3.1:latest" served).
type UnmatchedOverride struct {
	ID string
	// Closest is the served id the table most likely means: one with the
	// same name before ':', else the nearest by edit distance when it is
	// near enough; "" when none is.
	Closest string
}

// Problem says what is wrong and how to fix it, naming both ids, e.g.
// `no served model is "llama3.1:8b"; the server lists "llama3.1:latest":
// rename the table to [models."llama3.1:latest"]`.
func (u UnmatchedOverride) Problem() string {
	head := "no served model is " + strconv.Quote(u.ID)
	if u.Closest == "" {
		return head + ": [models." + tomlKey(u.ID) + "] has no effect; check the id against the server's /models list"
	}
	return head + "; the server lists " + strconv.Quote(u.Closest) + ": rename the table to [models." + tomlKey(u.Closest) + "]"
}

// Misnamed keeps the unmatched overrides that look like a misspelt served
// id (they have a Closest): those are worth a warning and a mention when a
// need binds nothing. An override with no served id near it is usual, as
// when a catalog describes several models of which a user pulled one, and
// is only listed.
func Misnamed(us []UnmatchedOverride) []UnmatchedOverride {
	var out []UnmatchedOverride
	for _, u := range us {
		if u.Closest != "" {
			out = append(out, u)
		}
	}
	return out
}

// Catalog is the result of [Client.Models]: what binding may use, and what it
// may not, and why.
type Catalog struct {
	Models  []Model // in the gateway's order
	Skipped []SkippedModel
	// Unmatched are the overrides that match no served id, sorted by id.
	Unmatched []UnmatchedOverride
}

// Message is one chat message on the wire.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one function call the model asked for. On the wire it is
// {"id","type":"function","function":{"name","arguments":"<JSON string>"}}
// (see [ToolCall.MarshalJSON]).
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // always a JSON object
}

// ToolSpec advertises one tool to the model under Name (the prompt-local alias).
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments; it must be an
	// object. Nil sends an empty object schema.
	Parameters json.RawMessage
}

// ChatRequest is one non-streaming chat completion.
type ChatRequest struct {
	Model       string
	Dialect     Dialect // "" means DialectOpenAI
	Messages    []Message
	Tools       []ToolSpec
	Temperature *float64
	MaxTokens   *int
	Thinking    *bool // sent as ThinkingSwitch says
	// ThinkingSwitch is how Thinking is sent; "" takes the client's
	// [Options.ThinkingSwitch]. Hosts pass the bound [Model.ThinkingSwitch].
	ThinkingSwitch ThinkingSwitch
}

// Completion is a parsed reply: either tool calls or non-blank text.
type Completion struct {
	Text         string
	ToolCalls    []ToolCall
	FinishReason string // "" when the backend sent none
	Reasoning    string // side channel; never the answer
	// Usage is the reply's token count; zero when the server sent none.
	Usage Usage
	// RequestJSON and ResponseJSON are the raw bodies, for debug capture.
	RequestJSON, ResponseJSON []byte
}
