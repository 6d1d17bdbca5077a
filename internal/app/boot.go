package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// closeTimeout bounds each last phase of a shutdown that Boot owns:
// stopping the watcher, and stopping the runs once the transport is done.
// It is the transport's own final bound, so no phase outlasts another.
const closeTimeout = transport.FinalCloseTimeout

// Transport is how Boot serves.
type Transport uint8

const (
	// HTTP serves streamable HTTP on [server].bind.
	HTTP Transport = iota + 1
	// Stdio serves one session on the process's stdin and stdout.
	Stdio
)

// BootOptions configure Boot.
type BootOptions struct {
	ConfigPath string
	Transport  Transport
	// Logger receives every log line (stderr in the binary).
	Logger *slog.Logger
	// LookupEnv reads the environment for ${VAR}; nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Stdin and Stdout carry the stdio transport.
	Stdin  io.Reader
	Stdout io.Writer
	// Version is the serverInfo version.
	Version string
	// Listening, when set, is told the HTTP address once it is bound.
	Listening func(net.Addr)
	// DrainTimeout bounds the wait for calls in flight at shutdown; 0
	// means transport.DefaultDrainTimeout.
	DrainTimeout time.Duration

	// modelRetry is the model list's timing (see envPlan.modelRetry); only
	// this package's tests set it.
	modelRetry modelset.Options
	// retrievalRetry is the embedding ranker's retry delay after a
	// failure (zero: match.DefaultRetryAfter); only tests set it.
	retrievalRetry time.Duration
}

// Boot runs the server the way mcp-server §10 orders it: load
// prompts.toml, resolve the catalog (refusing to serve an incomplete one),
// prepare the tool environment (the gateway's model catalog, fetched with
// a timeout, and the live tools), start the watcher and the model list's
// refresh (mcp-server §10.1), and serve until ctx
// ends or the stdio peer hangs up. A failure is a *StepError naming the
// step; a clean shutdown returns nil.
func Boot(ctx context.Context, o BootOptions) error {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	loader := config.Loader{LookupEnv: o.LookupEnv, Logger: logger}
	cfg, err := loader.Load(o.ConfigPath)
	if err != nil {
		return step(StepLoadConfig, err)
	}

	// HTTP-only settings are checked before anything slow, so a missing
	// token is reported at once rather than after the gateway fetch.
	var httpOpts transport.HTTPOptions
	switch o.Transport {
	case HTTP:
		if cfg.Server.APIKey == nil {
			return step(StepServe, transport.ErrMissingToken)
		}
		hosts, err := transport.ResolveAllowedHosts(cfg.Server.Bind, cfg.Server.AllowedHosts)
		if err != nil {
			return step(StepServe, err)
		}
		if err := transport.CheckAllowedOrigins(cfg.Server.AllowedOrigins); err != nil {
			return step(StepServe, err)
		}
		httpOpts = transport.HTTPOptions{APIKey: cfg.Server.APIKey.Reveal(), AllowedHosts: hosts, DrainTimeout: o.DrainTimeout,
			AllowedOrigins: cfg.Server.AllowedOrigins, MaxSessions: cfg.Server.MaxSessions}
	case Stdio:
	default:
		return step(StepServe, fmt.Errorf("unknown transport %d", o.Transport))
	}

	// The plan and the ranking come before the catalog, whose need_prompt
	// index is built with the ranking; neither contacts the network.
	metrics := server.NewMetrics()
	plan, err := planConfig(cfg)
	if err == nil {
		applyProcessMemory(cfg.Limits.ProcessMemory, cfg.Server.MaxConcurrentRuns, cfg.Limits.MaxRunMemory, logger)
	}
	if err != nil {
		return step(StepPrepareTools, err)
	}
	plan.modelRetry = o.modelRetry
	plan.retrieval.retryAfter = o.retrievalRetry
	rank, err := plan.ranking(metrics, logger)
	if err != nil {
		return step(StepPrepareTools, err)
	}
	defer rank.Close()

	handle, err := catalog.New(ctx, settingsOf(cfg), catalog.Options{Logger: logger, ConfigPath: o.ConfigPath,
		Ranker: rank.prompts, RetrievalPolicy: rank.promptPolicy})
	if err != nil {
		return step(StepResolve, err)
	}
	env, err := plan.build(ctx, metrics, logger)
	if err != nil {
		return step(StepPrepareTools, err)
	}
	defer env.Close()

	logPaths(logger, cfg, env.fileRoots)
	for _, r := range broadRoots(env.fileRoots) {
		logger.Warn("input_file and output_file may reach everything under a file root; set [paths].files in the configuration to the directories callers need",
			"root", r, "config", o.ConfigPath)
	}
	store, replica, err := openRunStore(ctx, cfg, metrics, logger)
	if err != nil {
		return step(StepRunStore, err)
	}
	var runStore runs.Store
	if store != nil {
		// Deferred before srv.Close, so it runs after: the registry
		// writes its last records first.
		defer store.Close()
		runStore, httpOpts.Health = store, store.Health
	}
	own, promptsDirs := ownFiles(o.ConfigPath, cfg)
	tracing, flushTraces, err := observability(ctx, cfg, o.LookupEnv, o.Version, logger)
	if err != nil {
		return step(StepPrepareTools, err)
	}
	// Deferred before the server's Close, so it runs after it: the runs
	// have ended and their spans are queued.
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		flushTraces(flushCtx)
	}()
	srv, err := server.New(server.Options{
		RunStore:    runStore,
		Replica:     replica,
		Catalog:     handle,
		Limits:      limitsOf(cfg),
		RunLimits:   plan.runLimits(),
		Client:      env.client,
		Models:      env.models,
		Tools:       env.tools,
		Ranking:     rank.run,
		FileRoots:   env.fileRoots,
		ConfigFiles: own,
		PromptsDirs: promptsDirs,
		Logger:      logger,
		Metrics:     metrics,
		Version:     o.Version,
		Tracing:     tracing,
	})
	if err != nil {
		return step(StepPrepareTools, err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := srv.Close(closeCtx); err != nil {
			logger.Warn("runs did not stop in time", "error", err)
		}
	}()

	serveCtx, stopWatching, err := watch(ctx, handle, loader, o.ConfigPath, cfg, env.models.Kick, logger)
	if err != nil {
		return step(StepWatch, err)
	}
	defer stopWatching()
	defer refreshModels(serveCtx, env.models, cfg.Gateway.Refresh)()

	switch o.Transport {
	case Stdio:
		logger.Info("serving on stdio; [server].bind and [server].api_key are not used on this transport", "bind", cfg.Server.Bind.String())
		if err := transport.ServeStdio(serveCtx, o.Stdin, o.Stdout, srv.Backend(), o.DrainTimeout); err != nil {
			return step(StepServe, err)
		}
		return nil
	default:
		addr := cfg.Server.Bind.String()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return step(StepServe, fmt.Errorf("bind %s: %w", addr, osCause(err)))
		}
		logger.Info("serving on http", "url", "http://"+ln.Addr().String()+"/mcp")
		if o.Listening != nil {
			o.Listening(ln.Addr())
		}
		httpOpts.Metrics = metrics.Handler()
		httpOpts.Status = srv.StatusHandler(transport.StatusPath)
		if err := transport.ServeHTTP(serveCtx, ln, srv.Backend(), httpOpts); err != nil {
			return step(StepServe, err)
		}
		return nil
	}
}

// refreshModels starts the goroutine that fetches the model list again
// on every catalog reload and every [gateway].refresh period (package
// modelset), and returns the function that stops it and waits for it.
// Boot owns it; it stops when serving ends.
func refreshModels(ctx context.Context, models *modelset.Set, period time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		models.Run(ctx, period)
	}()
	return func() {
		cancel()
		<-done
	}
}

// watch starts the prompt watcher when [server].watch is on and returns
// the context the transport serves under. When ctx ends, one goroutine
// (owned here, stopped by stop) stops the watcher first, so no reload
// publishes while the transport drains; without a watcher it shuts the
// handle instead. stop ends serving and waits for that goroutine.
// reloaded is called after each reload that read prompts.toml; it must
// not block (the watcher waits for it).
func watch(ctx context.Context, handle *catalog.Handle, loader config.Loader, path string, cfg *config.Config, reloaded func(), logger *slog.Logger) (serveCtx context.Context, stop func(), err error) {
	var watcher *catalog.Watcher
	if cfg.Server.Watch {
		load := reloadFunc(loader, path, cfg)
		watcher, err = catalog.Watch(ctx, handle, catalog.WatchOptions{
			ConfigPath: path,
			Debounce:   cfg.Server.WatchDebounce,
			Load: func(ctx context.Context) (catalog.Settings, []string, error) {
				s, unreloadable, err := load(ctx)
				if err == nil {
					reloaded()
				}
				return s, unreloadable, err
			},
			Logger: logger,
		})
		if err != nil {
			return nil, nil, err
		}
	} else {
		logger.Info("[server].watch is false: prompts are read once, at boot")
	}
	stopWatch := func() {
		if watcher == nil {
			handle.Shutdown()
			return
		}
		closeCtx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := watcher.Close(closeCtx); err != nil {
			logger.Warn("the prompt watcher did not stop in time", "error", err)
		}
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		<-serveCtx.Done()
		stopWatch()
	}()
	return serveCtx, func() {
		stopServing()
		<-watchDone
	}, nil
}
