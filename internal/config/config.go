package config

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/promptforge-go/promptforge/internal/secret"
)

// Defaults for every optional setting (mcp-server §2.2, design §3.2).
const (
	DefaultBind              = "127.0.0.1:9310"
	DefaultMaxConcurrentRuns = 4
	DefaultAdmissionTimeout  = 30 * time.Second
	// DefaultReplyDeadline is below the 60 s after which clients built on
	// the official TypeScript SDK (Claude Code among them) give up on a
	// call and cancel it: a long run comes back as running with its run id,
	// with 15 s to spare for the reply's way back, instead of being
	// cancelled by the client's timeout (the reference waits 240 s).
	DefaultReplyDeadline   = 45 * time.Second
	DefaultRetainCompleted = time.Hour
	DefaultWatch           = true
	DefaultWatchDebounce   = 500 * time.Millisecond
	// DefaultMaxSessions is [server].max_sessions' default. A live HTTP
	// session costs about 15 KB and a goroutine, so 512 of them are a few
	// MB: far above the handful of clients a deployment serves, and low
	// enough that a client looping on initialize cannot exhaust the process.
	DefaultMaxSessions = 512
	DefaultPromptsDir  = "prompts"
	// DefaultGatewayTimeout is [gateway].timeout's default. The gateway
	// client's zero-value default (gateway.DefaultModelsTimeout, for hosts
	// without a prompts.toml) is the same value.
	DefaultGatewayTimeout = 10 * time.Second
	// DefaultGatewayRefresh is [gateway].refresh's default: often enough
	// that a model pulled while nobody ran a prompt shows up within
	// minutes, rarely enough to cost the model server nothing.
	DefaultGatewayRefresh = 5 * time.Minute
	// DefaultRequestTimeout is [gateway].request_timeout's default: the
	// 120s every chat request had before the key existed (the gateway
	// client's own zero-value default, gateway.DefaultTimeout).
	DefaultRequestTimeout = 120 * time.Second
	// DefaultThinkingSwitch is [gateway].thinking_switch's default: what
	// was sent before the key existed.
	DefaultThinkingSwitch = ThinkingSwitchTemplateKwargs
	// DefaultMaxRunMemory is [limits].max_run_memory's default: the
	// reference's per-VM ceiling, here per run (luavm.DefaultMaxRunMemory;
	// config may not import luavm, and an app test keeps the two equal).
	DefaultMaxRunMemory = 64 << 20
	// DefaultMaxRequestSize is [limits].max_request_size's default
	// (gateway.DefaultMaxRequestBytes, kept equal by an app test).
	DefaultMaxRequestSize = 32 << 20
)

// The values thinking_switch accepts ([gateway] and [models."<id>"]); they
// are the gateway client's switch names.
const (
	ThinkingSwitchTemplateKwargs  = "chat_template_kwargs"
	ThinkingSwitchReasoningEffort = "reasoning_effort"
	ThinkingSwitchNone            = "none"
)

// Config is one loaded prompts.toml, validated. Values are as written after
// ${VAR} expansion; [Config.PromptDirs] and [Config.FileRoots] resolve the
// paths among them against Dir.
type Config struct {
	// Path is the file Loader.Load read, as given; empty for Parse.
	Path string
	// Dir is the absolute directory of Path, which relative paths in the
	// file are read against (design §0): an IDE starts a stdio server in
	// the project directory, so a path read against the working directory
	// would change with whoever starts the server. The directory is the
	// one Path names, symlinks not evaluated, as an editor shows it. Empty
	// for Parse, whose relative paths stay relative to the working
	// directory.
	Dir     string
	Server  Server
	Paths   Paths
	Gateway Gateway
	Catalog Catalog
	Tools   Tools
	Runs    Runs
	// Retrieval is [retrieval]: the embedding ranker, when set.
	Retrieval Retrieval
	Limits    Limits
	// Prompts holds the [prompts.NAME] blocks by NAME; never nil.
	Prompts map[string]PromptBlock
	// Models holds the [models."<id>"] tables by model id; never nil.
	Models ModelTable
	// Observability is the [observability] table.
	Observability Observability
}

// ModelTable holds the [models."<id>"] tables by model id. The values are
// config's own plain settings: the server translates them into the
// gateway's overrides, so config never imports the gateway.
type ModelTable map[string]ModelSetting

// ModelSetting is one [models."<id>"] table (design §3.3), validated. A
// zero field means the key is absent.
type ModelSetting struct {
	Description string
	// Context is the model's context window in tokens.
	Context uint32
	// Thinking is "never", "always" or "switchable".
	Thinking string
	// ToolDialect is ToolDialectOpenAI or ToolDialectGemma3.
	ToolDialect string
	// ThinkingSwitch is one of the ThinkingSwitch* values; "" takes
	// [gateway].thinking_switch.
	ThinkingSwitch string
}

// The values [models."<id>"].tool_dialect accepts; they are the gateway
// client's dialect names.
const (
	ToolDialectOpenAI = "openai"
	ToolDialectGemma3 = "gemma3_tool_code"
)

// Server is the [server] table.
type Server struct {
	// Bind is the HTTP listen address: an IP literal and a port.
	Bind netip.AddrPort
	// AllowedHosts are the Host authorities HTTP clients may use; empty
	// means the loopback defaults (resolved by the server at start).
	AllowedHosts []string
	// APIKey is the bearer token HTTP clients must present; nil when the
	// key is absent (or was an unset ${VAR}), which the stdio transport
	// accepts and the HTTP transport refuses.
	APIKey *secret.Secret
	// AllowedOrigins are the browser origins ("scheme://host[:port]") HTTP
	// requests may carry; empty means an Origin must name an allowed host
	// on the port the request came to (the server's own pages).
	AllowedOrigins []string
	// MaxSessions caps the live stateful HTTP sessions; a new one beyond
	// it is refused.
	MaxSessions       int
	MaxConcurrentRuns int
	AdmissionTimeout  time.Duration
	ReplyDeadline     time.Duration
	RetainCompleted   time.Duration
	Watch             bool
	WatchDebounce     time.Duration
}

// Paths is the [paths] table.
type Paths struct {
	// Prompts are the prompts directories as written, in order: one when
	// the key is a string (or absent), several when it is an array; never
	// empty. Use Config.PromptDirs for the directories to read.
	Prompts []string
	// Files are the directories input_file and output_file must resolve
	// inside, as written (design §3.4). nil means the key is absent and the
	// working directory is the one root; an empty, non-nil slice means the
	// operator listed none, so no file may be read or written. Use
	// Config.FileRoots for absolute roots.
	Files []string
}

// Gateway is the [gateway] table.
type Gateway struct {
	// URL is the gateway API root (including /v1) exactly as written,
	// untrimmed; it was checked to be an http(s) URL with a host.
	URL    string
	APIKey secret.Secret
	// Timeout bounds each GET /models (design §3.2).
	Timeout time.Duration
	// RequestTimeout bounds one chat request, connect to last byte.
	RequestTimeout time.Duration
	// ThinkingSwitch is how a thinking switch is sent to models whose
	// [models."<id>"] table names none: one of the ThinkingSwitch* values.
	ThinkingSwitch string
	// Refresh is how often the model list is fetched again while
	// serving; 0 turns the periodic fetch off (binding misses and
	// reloads still fetch).
	Refresh time.Duration
}

// Catalog is the [catalog] table: glob patterns relative to the prompts
// directory, already checked to be relative, free of "..", and valid.
type Catalog struct {
	Include []string
	Exclude []string
	// Tools are globs over prompt names (path.Match syntax): the prompts
	// they match are also published as MCP tools of their own. Empty (the
	// default): only the four built-in tools.
	Tools []string
}

// Tools is the [tools] table: which live tools runs may use.
type Tools struct {
	WebFetch  bool
	WebSearch bool
	// Search is where web_search searches (the [tools.web_search]
	// table); Provider is SearchGateway unless the table says otherwise.
	Search WebSearch
}

// Limits is the [limits] table: how much memory one run, one model
// request and the whole process may take, so that no prompt can exhaust
// the process (sizes in bytes).
type Limits struct {
	// MaxRunMemory is what one run's Lua values and store may hold at once.
	MaxRunMemory int64
	// MaxRequestSize caps one chat request body sent to the gateway.
	MaxRequestSize int64
	// ProcessMemory is the Go runtime's soft memory limit, applied at start
	// (runtime/debug.SetMemoryLimit). 0 means the key is absent: the host
	// then keeps GOMEMLIMIT when the environment sets it and otherwise
	// picks a default. NoProcessMemoryLimit means "0" was written: no limit.
	ProcessMemory int64
}

// NoProcessMemoryLimit is [limits].process_memory = "0": the runtime gets
// no soft memory limit, whatever GOMEMLIMIT says.
const NoProcessMemoryLimit int64 = -1

// PromptBlock is one [prompts.NAME] table.
type PromptBlock struct {
	// Enabled is false to hide the prompt NAME from callers.
	Enabled bool
	// File is a prompt file relative to the prompts directory, or empty
	// when the block only toggles a globbed prompt.
	File string
}

// defaults returns a Config with every default filled in; the loader
// overwrites what the file sets.
func defaults() *Config {
	return &Config{
		Server: Server{
			Bind:              netip.MustParseAddrPort(DefaultBind),
			MaxConcurrentRuns: DefaultMaxConcurrentRuns,
			MaxSessions:       DefaultMaxSessions,
			AdmissionTimeout:  DefaultAdmissionTimeout,
			ReplyDeadline:     DefaultReplyDeadline,
			RetainCompleted:   DefaultRetainCompleted,
			Watch:             DefaultWatch,
			WatchDebounce:     DefaultWatchDebounce,
		},
		Paths:     Paths{Prompts: []string{DefaultPromptsDir}},
		Gateway:   Gateway{Timeout: DefaultGatewayTimeout, RequestTimeout: DefaultRequestTimeout, ThinkingSwitch: DefaultThinkingSwitch, Refresh: DefaultGatewayRefresh},
		Tools:     Tools{Search: WebSearch{Provider: SearchGateway}},
		Retrieval: Retrieval{Timeout: DefaultRetrievalTimeout},
		Runs:      Runs{Lease: DefaultRunsLease},
		Limits:    Limits{MaxRunMemory: DefaultMaxRunMemory, MaxRequestSize: DefaultMaxRequestSize},
		Prompts:   map[string]PromptBlock{},
		Models:    ModelTable{},

		Observability: Observability{Traces: DefaultTraces, TraceSteps: DefaultTraceSteps},
	}
}

// PromptDirs returns the prompts directories, in the order written and
// without duplicates: each relative entry joined to Dir, each absolute one
// cleaned. Nothing is looked up on the filesystem.
func (c *Config) PromptDirs() []string {
	var dirs []string
	for _, p := range c.Paths.Prompts {
		if d := c.resolve(p); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// resolve reads a path written in the file: absolute as it is, relative
// against Dir ("~" is never expanded; the loader refuses it).
func (c *Config) resolve(p string) string {
	if filepath.IsAbs(p) || c.Dir == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(c.Dir, p)
}

// FileRoots returns the directories input_file and output_file must
// resolve inside, absolute and cleaned, without duplicates: each
// [paths].files entry read against Dir, or, when the key is absent, the
// working directory, which is where a caller's relative input_file is
// read from (an IDE starts the server in its project). Symlinks are not
// evaluated here; the server does that at call time, when the filesystem
// is what it will be.
func (c *Config) FileRoots() ([]string, error) {
	entries := c.Paths.Files
	if entries == nil {
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find the working directory, the default [paths].files root: %w; set [paths].files to absolute directories", err)
		}
		return []string{cwd}, nil
	}
	roots := make([]string, 0, len(entries))
	for _, e := range entries {
		abs, err := filepath.Abs(c.resolve(e))
		if err != nil {
			return nil, fmt.Errorf("resolve [paths].files entry %q: %w; write it as an absolute path", e, err)
		}
		if !slices.Contains(roots, abs) {
			roots = append(roots, abs)
		}
	}
	return roots, nil
}

// DiffUnreloadable lists, in a fixed order, the settings that differ
// between c (the configuration the process booted with) and next (a file
// just reloaded) but cannot take effect without a restart. A live reload
// applies only [catalog] and [prompts.*]; everything else is fixed at boot
// because something built once from it lives for the whole process:
//
//   - [server].* — the listener, its bearer token and Host list, the run
//     registry's slots and timers, and the watcher itself;
//   - [paths].prompts — the watched roots, compared as written (the reload
//     keeps the boot directories);
//   - [gateway].url, api_key, timeout, refresh — the client and the model
//     list's refresh goroutine, built at boot;
//   - [gateway].request_timeout, thinking_switch — the gateway client,
//     built once at boot;
//   - [paths].files — the file roots the server checks paths against;
//   - [tools].* — the live tool set, built once at boot (the reference
//     neither applies nor reports these; we report them);
//   - [runs].* — the run store, opened once at boot;
//   - [models."<id>"] — overrides merged into the boot model catalog, one
//     entry per id added, removed or changed, ids sorted;
//   - [observability] — the trace book and the OTLP exporter, built once
//     at boot.
//
// The first twelve names and their order are the reference's (mcp-server §7.5);
// the rest are ours. The result is empty when nothing unreloadable changed.
func (c *Config) DiffUnreloadable(next *Config) []string {
	var out []string
	add := func(changed bool, name string) {
		if changed {
			out = append(out, name)
		}
	}
	a, b := c.Server, next.Server
	add(a.Bind != b.Bind, "[server].bind")
	add(!sameSecret(a.APIKey, b.APIKey), "[server].api_key")
	add(a.MaxConcurrentRuns != b.MaxConcurrentRuns, "[server].max_concurrent_runs")
	add(a.AdmissionTimeout != b.AdmissionTimeout, "[server].admission_timeout")
	add(a.ReplyDeadline != b.ReplyDeadline, "[server].reply_deadline")
	add(a.RetainCompleted != b.RetainCompleted, "[server].retain_completed")
	add(a.Watch != b.Watch, "[server].watch")
	add(a.WatchDebounce != b.WatchDebounce, "[server].watch_debounce")
	add(!slices.Equal(a.AllowedHosts, b.AllowedHosts), "[server].allowed_hosts")
	add(!slices.Equal(c.Paths.Prompts, next.Paths.Prompts), "[paths].prompts")
	add(c.Gateway.URL != next.Gateway.URL, "[gateway].url")
	add(c.Gateway.APIKey != next.Gateway.APIKey, "[gateway].api_key")
	add(!slices.Equal(a.AllowedOrigins, b.AllowedOrigins), "[server].allowed_origins")
	add(a.MaxSessions != b.MaxSessions, "[server].max_sessions")
	add(c.Gateway.Timeout != next.Gateway.Timeout, "[gateway].timeout")
	add(c.Gateway.RequestTimeout != next.Gateway.RequestTimeout, "[gateway].request_timeout")
	add(c.Gateway.ThinkingSwitch != next.Gateway.ThinkingSwitch, "[gateway].thinking_switch")
	add(c.Gateway.Refresh != next.Gateway.Refresh, "[gateway].refresh")
	add((c.Paths.Files == nil) != (next.Paths.Files == nil) || !slices.Equal(c.Paths.Files, next.Paths.Files), "[paths].files")
	add(c.Tools.WebFetch != next.Tools.WebFetch, "[tools].web_fetch")
	add(c.Tools.WebSearch != next.Tools.WebSearch, "[tools].web_search")
	diffRuns(c.Runs, next.Runs, add)
	out = append(out, c.diffRetrieval(next)...)
	add(c.Limits.MaxRunMemory != next.Limits.MaxRunMemory, "[limits].max_run_memory")
	add(c.Limits.MaxRequestSize != next.Limits.MaxRequestSize, "[limits].max_request_size")
	add(c.Limits.ProcessMemory != next.Limits.ProcessMemory, "[limits].process_memory")
	add(c.Observability != next.Observability, "[observability]")
	ids := slices.Sorted(maps.Keys(c.Models))
	for id := range maps.Keys(next.Models) {
		if _, ok := c.Models[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		old, inOld := c.Models[id]
		cur, inNext := next.Models[id]
		add(inOld != inNext || old != cur, modelKey(id))
	}
	return out
}

func sameSecret(a, b *secret.Secret) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// modelKey renders a [models."<id>"] table name.
func modelKey(id string) string { return "[models." + quoteKey(id) + "]" }
