package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/runtrace"
	"github.com/promptforge-go/promptforge/internal/server/transport"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// Limits are the [server] settings the run registry enforces.
type Limits struct {
	MaxConcurrentRuns int
	AdmissionTimeout  time.Duration
	ReplyDeadline     time.Duration
	RetainCompleted   time.Duration
}

// Options is everything a Server is built from. app.Boot fills it from
// prompts.toml; tests fill it directly.
type Options struct {
	// Catalog is the live catalog (required). The Server reads one
	// generation per call and never closes the Handle. need_prompt is
	// published exactly when the Handle was built with retrieval
	// (catalog.Options.NoRetrieval false).
	Catalog *catalog.Handle
	// Limits configure the run registry the Server creates and owns.
	Limits Limits
	// RunLimits are the engine limits every run gets ([limits] in
	// prompts.toml); zero fields take the engine's defaults.
	RunLimits engine.Limits
	// Client is the gateway every run's model calls go to; nil gives runs
	// a disabled client, so Lua-only prompts run and model calls fail
	// saying no gateway is configured.
	Client *gateway.Client
	// Models is the gateway's model list, with the [models] overrides
	// applied, which the host keeps fresh; each run binds against a
	// snapshot of it (engine.Options.ModelSet). nil: runs have no models.
	Models *modelset.Set
	// Tools are the live tools runs may bind with tools.need.
	Tools []tools.Tool
	// Ranking is how runs and list_prompts' probe rank tools.need and
	// models.need ([retrieval] in prompts.toml); zero ranks lexically.
	Ranking engine.Ranking
	// FileRoots are the absolute directories input_file and output_file
	// must resolve inside; empty forbids both.
	FileRoots []string
	// ConfigFiles are the server's own configuration files (prompts.toml
	// and its env file): input_file and output_file may never name them,
	// whatever the roots.
	ConfigFiles []string
	// PromptsDirs are the [paths].prompts directories: output_file may never
	// be inside one, whatever the roots, so no caller rewrites a prompt.
	PromptsDirs []string
	// Logger receives the server's lines; nil discards them.
	Logger *slog.Logger
	// Metrics receive the server's series; nil makes a fresh set.
	Metrics *Metrics
	// Version is the serverInfo version.
	Version string
	// Observer, when set, sees every observation of every run, after the
	// server's own log narration and before the call's progress. Like
	// every engine.Observer it must not block; it is called on the run's
	// goroutine (and concurrently by fanout arms).
	Observer engine.Observer
	// Tracing, when set, keeps a trace of every run with these options
	// (docs/configuration.md, [observability]); nil keeps none.
	Tracing *runtrace.Options
	// OnTerminal, when set, is called once per launched run with its
	// terminal record, after the server has counted it in its metrics and
	// the record is collectable, and before the call waiting on the run is
	// answered. It runs on the run's goroutine and must not block.
	OnTerminal func(runs.Result)
	// RunStore keeps the run records; nil keeps them in memory. Replica
	// names this process in the records it owns ([runs] in prompts.toml,
	// docs/deployment.md). The caller closes the store after Close.
	RunStore runs.Store
	Replica  string
}

// Server is the MCP server over one catalog and one run registry, shared
// by every session on every transport.
type Server struct {
	// narrations are the speculative attempts' held observations, reused
	// (holdNarration).
	narrations sync.Pool
	impl       *mcp.Implementation // what MCP was created with (Backend.Impl)
	catalog    *catalog.Handle
	runs       *runs.Registry
	client     *gateway.Client
	limits     engine.Limits // every run's ([limits] in prompts.toml)
	models     *modelset.Set
	tools      []tools.Tool
	ranking    engine.Ranking
	picks      *engine.ModelPicks // every run's model bindings, for ranking
	files      fileAccess
	log        *slog.Logger
	observer   engine.Observer // the narration, then Options.Observer
	metrics    *Metrics
	// publishNeedPrompt: the catalog ranks prompts, so need_prompt is
	// published.
	publishNeedPrompt bool
	// builtins are the fixed tools; toolList is them followed by the
	// prompt tools of the current catalog, in tools/list order (follow
	// replaces it).
	builtins []*mcp.Tool
	toolList atomic.Pointer[[]*mcp.Tool]
	mcp      *mcp.Server
	// followMu serialises follow; promptSigs and toolSigs, which it
	// guards, are the MCP prompts and prompt tools registered with the
	// SDK, by name, with their published JSON.
	followMu   sync.Mutex
	promptSigs map[string]string
	toolSigs   map[string]string
	followed   *catalog.Catalog // the catalog follow last made them match
	// problems holds list_prompts' binding problems (see bindingProblems).
	problems bindingProblems
	// pages holds list_prompts' rendered pages (listing.go).
	pages pageCache
	// renderers: how each run answered as a task renders (tasks.go).
	renderers taskRenderers

	// traces holds the runs' traces; nil when Options.Tracing is.
	traces *runtrace.Book
	// tracesInRecords: the registry keeps each run's trace with its
	// record (the in-memory run store, runtrace.NewRecordBook); otherwise
	// the book keeps them.
	tracesInRecords bool

	// calls tracks the tools/call handlers in flight for the transports:
	// every handler is registered through it.
	calls *transport.Calls
	// direct is the built-in tools' handlers as registered with the SDK
	// (tracked by calls), by name: AnswerCall's tool table. Never
	// changed after New.
	direct map[string]mcp.ToolHandler
	// serverInfo is impl as encoding/json writes it, for AnswerCall's
	// 2026-07-28 results.
	serverInfo []byte
}

// New builds the server and its run registry, and registers the tools.
func New(opts Options) (*Server, error) {
	if opts.Catalog == nil {
		return nil, errors.New("create the MCP server: no catalog was given")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	metrics := opts.Metrics
	if metrics == nil {
		metrics = NewMetrics()
	}
	client := opts.Client
	if client == nil {
		client = gateway.NewDisabled("no gateway is configured for this server: set [gateway].url and [gateway].api_key in prompts.toml")
	}
	onTerminal := opts.OnTerminal
	// s is built after the registry, whose terminal callback needs it.
	var s *Server
	reg, err := runs.New(runs.Options{
		MaxConcurrentRuns: opts.Limits.MaxConcurrentRuns,
		AdmissionTimeout:  opts.Limits.AdmissionTimeout,
		ReplyDeadline:     opts.Limits.ReplyDeadline,
		RetainCompleted:   opts.Limits.RetainCompleted,
		Logger:            logger,
		Store:             opts.RunStore,
		Replica:           opts.Replica,
		OnTerminal: func(res runs.Result) {
			metrics.runEnded(res)
			if res.Status == runs.StatusFailed && s.traces != nil {
				// The run's body ended its trace in the record's words
				// as it then knew them (runBody), but a cancellation
				// that lands after that and before the record is
				// written puts its cause in front of the record's
				// error (runs.FailureText): a failed record restates
				// the trace's header, which reads no clock and files
				// nothing. Failures only: a completed record is never
				// reworded, and completed runs are the fast path.
				s.restateTrace(res)
			}
			if onTerminal != nil {
				onTerminal(res)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create the MCP server: %w", err)
	}
	if err := metrics.bindRegistry(reg); err != nil {
		return nil, fmt.Errorf("create the MCP server: %w", err)
	}
	version := opts.Version
	if version == "" {
		version = "0.0.0"
	}
	s = &Server{
		catalog:  opts.Catalog,
		runs:     reg,
		client:   client,
		models:   opts.Models,
		tools:    opts.Tools,
		ranking:  opts.Ranking,
		picks:    engine.NewModelPicks(),
		limits:   opts.RunLimits,
		problems: bindingProblems{ranking: opts.Ranking},
		files: fileAccess{
			roots:     fileRoots(opts.FileRoots),
			secret:    opts.ConfigFiles,
			published: opts.PromptsDirs,
		},
		log:               logger,
		observer:          engine.Observers(engine.LogObserver(logger, serveNarration()), opts.Observer),
		metrics:           metrics,
		publishNeedPrompt: opts.Catalog.RetrievalEnabled(),
		calls:             &transport.Calls{},
	}
	switch {
	case opts.Tracing == nil:
	case opts.RunStore == nil:
		// The in-memory run store keeps each run's trace in its record
		// (traces.go): one map, one retention.
		s.traces, s.tracesInRecords = runtrace.NewRecordBook(*opts.Tracing), true
	default:
		// A shared store cannot hold a trace: the book keeps this
		// replica's, with the registry's retention.
		s.traces = runtrace.NewBook(*opts.Tracing, reg.RetainCompleted(), runs.DefaultMaxRetainedRuns)
	}
	s.builtins = builtinTools(s.publishNeedPrompt)
	caps := &mcp.ServerCapabilities{
		// The tool list changes only when [catalog].tools publishes
		// prompts as tools; without it, the four tools are fixed and
		// no client is told to watch them. Whether the setting is
		// used is read at boot: adding it later publishes the tools,
		// but only a restart advertises listChanged.
		Tools: &mcp.ToolCapabilities{ListChanged: len(opts.Catalog.Current().Catalog().ToolPatterns()) > 0},
		// Every healthy catalog prompt is an MCP prompt, and the
		// catalog reloads.
		Prompts: &mcp.PromptCapabilities{ListChanged: true},
	}
	// The Tasks extension is advertised in initialize and server/discover
	// alike (the SDK builds both from these capabilities).
	caps.AddExtension(tasksExtension, nil)
	s.impl = &mcp.Implementation{Name: ServerName, Version: version}
	s.mcp = mcp.NewServer(s.impl, &mcp.ServerOptions{
		Instructions: instructions,
		Capabilities: caps,
		Logger:       transport.SDKLogger(logger, "mcp"),
	})
	handlers := map[string]mcp.ToolHandler{
		ToolListPrompts: s.listPrompts,
		ToolRunPrompt:   s.runPrompt,
		ToolNeedPrompt:  s.needPrompt,
		ToolCheckRun:    s.checkRun,
	}
	s.direct = make(map[string]mcp.ToolHandler, len(s.builtins))
	for _, t := range s.builtins {
		// One tracked handler per tool, for the SDK and for AnswerCall.
		tracked := s.calls.Track(handlers[t.Name])
		s.mcp.AddTool(t, tracked)
		s.direct[t.Name] = tracked
	}
	if s.serverInfo, err = json.Marshal(s.impl); err != nil {
		return nil, fmt.Errorf("create the MCP server: encode its serverInfo: %w", err)
	}
	s.mcp.AddReceivingMiddleware(s.toolsListMiddleware, s.promptsGetMiddleware, s.pagesMiddleware)
	if err := s.registerTasks(s.mcp); err != nil {
		return nil, fmt.Errorf("create the MCP server: %w", err)
	}
	// Last, so that it is outermost and every error reply gets a valid code.
	s.mcp.AddReceivingMiddleware(transport.ErrorCodes)
	s.follow()
	// The Handle outlives no server in practice (both are the process's);
	// after Close a reload still re-registers, which is harmless.
	opts.Catalog.OnPublish(s.follow)
	return s, nil
}

// serveNarration is how the server logs its runs: the run starting at
// info and failures at warn, with progress at debug (callers get it over
// MCP), and no line carries a section name or anything else an author
// wrote (mcp-server §1.3): many callers share one log.
func serveNarration() engine.Narration { return engine.Narration{Progress: slog.LevelDebug} }

// MCP is the SDK server every transport connects sessions to.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Backend is what the transports serve: the SDK server, the tracker the
// tools were registered through, and Close to stop the runs at shutdown.
func (s *Server) Backend() transport.Backend {
	// NoParamHeaders: every input schema is built here (tools.go
	// inputSchema, prompttools.go promptToolSchema) from a type, a
	// description and a default, never an x-mcp-header.
	//
	// LazyRead: AnswerCall announces every wait of a direct call
	// (DirectCall.Wait) but a shared run store's round trips, so only
	// over the in-memory store.
	return transport.Backend{MCP: s.mcp, Calls: s.calls, CloseRuns: s.Close, Logger: s.log, NoParamHeaders: true, Impl: s.impl, Direct: s.AnswerCall,
		LazyRead: s.runs.StoreNeverWaits()}
}

// Registry is the run registry all sessions share.
func (s *Server) Registry() *runs.Registry { return s.runs }

// Tools returns the published tools in tools/list order. The slice is
// the caller's; the tools are shared and must not be modified.
func (s *Server) Tools() []*mcp.Tool { return append([]*mcp.Tool(nil), *s.toolList.Load()...) }

// Close stops admitting runs, cancels the ones still going and waits for
// them (bounded by ctx). Finished records stay readable.
func (s *Server) Close(ctx context.Context) error {
	if err := s.runs.Close(ctx); err != nil {
		return fmt.Errorf("stop the runs: %w", err)
	}
	return nil
}

// toolsListMiddleware answers tools/list itself: in the published order
// and with the decimal offset cursors of mcp-server §4.2. go-sdk v1.8.0 lists
// tools sorted by name and pages with its own opaque cursor
// (mcp/server.go, Server.listTools and paginateList; mcp/features.go,
// featureSet.all); no upstream issue found, as both are its documented
// choice. The transports are not involved, so this stays in server.
func (s *Server) toolsListMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		lr, ok := req.(*mcp.ListToolsRequest)
		if method != "tools/list" || !ok {
			return next(ctx, method, req)
		}
		cursor := ""
		if lr.Params != nil {
			cursor = lr.Params.Cursor
			// The SDK's own paging would read our cursor as its opaque
			// token; it lists everything and we page.
			lr.Params.Cursor = ""
		}
		offset, err := parseCursor(cursor)
		if err != nil {
			return nil, err
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, err
		}
		list, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return res, nil
		}
		list.Tools, list.NextCursor = page(*s.toolList.Load(), offset, toolsPageSize)
		return list, nil
	}
}

// toolsPageSize is tools/list's page size; with four tools there is only
// ever one page, but a cursor still works as specified.
const toolsPageSize = 100

// page returns items[offset:offset+size] (empty past the end) and the
// cursor of the next page, "" when none remain.
func page[T any](items []T, offset, size int) ([]T, string) {
	if offset >= len(items) {
		return []T{}, ""
	}
	end := min(len(items), offset+size)
	next := ""
	if end < len(items) {
		next = fmt.Sprint(end)
	}
	return items[offset:end], next
}
