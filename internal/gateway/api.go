package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/promptforge-go/promptforge/internal/secret"
)

// Options locates a gateway: any OpenAI-shaped server whose API root
// (including /v1) is BaseURL.
type Options struct {
	BaseURL string        // http(s)://host[:port]/v1; no userinfo, query or fragment; trailing / trimmed
	APIKey  secret.Secret // sent as "Authorization: Bearer <key>"
	// Timeout bounds one whole chat request, connect to last body byte
	// (default DefaultTimeout, 120s).
	Timeout time.Duration
	// ModelsTimeout bounds the GET /models request (default
	// DefaultModelsTimeout, 10s) so a host's boot never hangs on a silent
	// gateway (design §3.2). A caller's ctx deadline also applies.
	ModelsTimeout time.Duration
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
	http          *http.Client
	// disabled, when non-empty, is why this client refuses every call.
	disabled string
}

// Thinking is a model's reasoning switch mode from the catalog.
type Thinking string

const (
	ThinkingNever      Thinking = "never"
	ThinkingAlways     Thinking = "always"
	ThinkingSwitchable Thinking = "switchable"
)

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
}

// SkippedModel is a served id that no source describes fully, or an
// override whose id the gateway does not serve (it has no effect).
type SkippedModel struct {
	ID     string
	Reason string // e.g. `no description: add [models."llama3"] description = "..."`
}

// Catalog is the result of [Client.Models]: what binding may use, and what it
// may not, and why.
type Catalog struct {
	Models  []Model // in the gateway's order
	Skipped []SkippedModel
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
	Thinking    *bool // sent as chat_template_kwargs.enable_thinking
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
