package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// Boot steps: the outermost message of a failure report (spec §1.2).
const (
	StepLoadConfig   = "load the configuration"
	StepResolve      = "resolve the prompt catalog"
	StepPrepareTools = "prepare the tool environment"
	StepWatch        = "start the prompt watcher"
	StepServe        = "serve the transport"
)

// StepError is a boot failure: the step that failed and why.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

func step(name string, err error) error { return &StepError{Step: name, Err: err} }

// WriteReport prints a boot failure the way an operator reads it: the
// failed step, then one "caused by" line per link of the error chain, each
// link's own message without the text of the links below it. A message
// spanning several lines (a catalog's fault list) is printed as it is.
func WriteReport(w io.Writer, err error) {
	if err == nil {
		return
	}
	var se *StepError
	if errors.As(err, &se) {
		fmt.Fprintf(w, "error: %s\n", se.Step)
		err = se.Err
	} else {
		fmt.Fprintf(w, "error: %s\n", ownMessage(err))
		err = errors.Unwrap(err)
	}
	for ; err != nil; err = errors.Unwrap(err) {
		fmt.Fprintf(w, "  caused by: %s\n", ownMessage(err))
	}
}

// ownMessage is err's message minus the ": <cause>" its wrapping appended.
func ownMessage(err error) string {
	msg := err.Error()
	if next := errors.Unwrap(err); next != nil {
		if own, ok := strings.CutSuffix(msg, ": "+next.Error()); ok {
			return own
		}
	}
	return msg
}

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
	LookupEnv config.LookupFunc
	// Stdin and Stdout carry the stdio transport.
	Stdin  io.Reader
	Stdout io.Writer
	// Version is the serverInfo version.
	Version string
	// Listening, when set, is told the HTTP address once it is bound.
	Listening func(net.Addr)
	// DrainTimeout bounds the wait for calls in flight at shutdown; 0
	// means DefaultDrainTimeout.
	DrainTimeout time.Duration
}

// Boot runs the server the way spec §10 orders it: load prompts.toml,
// resolve the catalog (refusing to serve an incomplete one), prepare the
// tool environment (the gateway's model catalog, fetched with a timeout,
// and the live tools), start the watcher, and serve until ctx ends or the
// stdio peer hangs up. A failure is a *StepError naming the step; a clean
// shutdown returns nil.
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
	var httpOpts HTTPOptions
	switch o.Transport {
	case HTTP:
		if cfg.Server.APIKey == nil {
			return step(StepServe, ErrMissingToken)
		}
		hosts, err := ResolveAllowedHosts(cfg.Server.Bind, cfg.Server.AllowedHosts)
		if err != nil {
			return step(StepServe, err)
		}
		httpOpts = HTTPOptions{APIKey: cfg.Server.APIKey.Reveal(), AllowedHosts: hosts, DrainTimeout: o.DrainTimeout}
	case Stdio:
	default:
		return step(StepServe, fmt.Errorf("unknown transport %d", o.Transport))
	}

	handle, err := catalog.New(ctx, SettingsOf(cfg), catalog.Options{Logger: logger, ConfigPath: o.ConfigPath})
	if err != nil {
		return step(StepResolve, err)
	}

	metrics := NewMetrics()
	env, err := PrepareEnvironment(ctx, cfg, metrics, logger)
	if err != nil {
		return step(StepPrepareTools, err)
	}
	defer env.Close()

	for _, r := range broadRoots(env.FileRoots) {
		logger.Warn(fmt.Sprintf("input_file and output_file may reach everything under %s; set [paths].files in %s to the directories callers need", r, o.ConfigPath))
	}
	own, promptsDir := ownFiles(o.ConfigPath, cfg)
	srv, err := New(Options{
		Catalog:     handle,
		Limits:      LimitsOf(cfg),
		Client:      env.Client,
		Models:      env.Models,
		Tools:       env.Tools,
		FileRoots:   env.FileRoots,
		ConfigFiles: own,
		PromptsDir:  promptsDir,
		Logger:      logger,
		Metrics:     metrics,
		Version:     o.Version,
	})
	if err != nil {
		return step(StepPrepareTools, err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), finalCloseTimeout)
		defer cancel()
		if err := srv.Close(closeCtx); err != nil {
			logger.Warn("runs did not stop in time", "error", err)
		}
	}()

	var watcher *catalog.Watcher
	if cfg.Server.Watch {
		watcher, err = catalog.Watch(ctx, handle, catalog.WatchOptions{
			ConfigPath: o.ConfigPath,
			Debounce:   cfg.Server.WatchDebounce,
			Load:       ReloadFunc(loader, o.ConfigPath, cfg),
			Logger:     logger,
		})
		if err != nil {
			return step(StepWatch, err)
		}
	} else {
		logger.Info("[server].watch is false: prompts are read once, at boot")
	}
	// On shutdown the watcher stops first, so no reload publishes while
	// the transport drains.
	stopWatch := func() {
		if watcher == nil {
			handle.Shutdown()
			return
		}
		closeCtx, cancel := context.WithTimeout(context.Background(), finalCloseTimeout)
		defer cancel()
		if err := watcher.Close(closeCtx); err != nil {
			logger.Warn("the prompt watcher did not stop in time", "error", err)
		}
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		<-serveCtx.Done()
		stopWatch()
	}()
	defer func() {
		stopServing()
		<-watchDone
	}()

	switch o.Transport {
	case Stdio:
		logger.Info(fmt.Sprintf("serving on stdio; [server].bind (%s) and [server].api_key are not used on this transport", cfg.Server.Bind))
		if err := srv.ServeStdio(serveCtx, o.Stdin, o.Stdout, o.DrainTimeout); err != nil {
			return step(StepServe, err)
		}
		return nil
	default:
		addr := cfg.Server.Bind.String()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return step(StepServe, fmt.Errorf("bind %s: %w", addr, osCause(err)))
		}
		logger.Info(fmt.Sprintf("serving on http://%s/mcp", ln.Addr()))
		if o.Listening != nil {
			o.Listening(ln.Addr())
		}
		if err := srv.Serve(serveCtx, ln, httpOpts); err != nil {
			return step(StepServe, err)
		}
		return nil
	}
}

// ownFiles are the server's files no caller path may name: prompts.toml
// and its env file, and the prompts directory, all absolute.
func ownFiles(configPath string, cfg *config.Config) (secret []string, prompts string) {
	for _, p := range []string{configPath, config.EnvFilePath(configPath)} {
		if abs, err := filepath.Abs(p); err == nil {
			secret = append(secret, abs)
		}
	}
	prompts, err := filepath.Abs(cfg.Paths.Prompts)
	if err != nil {
		prompts = cfg.Paths.Prompts
	}
	return secret, prompts
}

// osCause is the operating system's own error under a net.OpError (for
// "address already in use"), so a report does not repeat the address and
// the operation in layers; other errors are returned as they are.
func osCause(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

// SettingsOf is what catalog resolution needs from a configuration.
func SettingsOf(cfg *config.Config) catalog.Settings {
	blocks := make(map[string]catalog.Block, len(cfg.Prompts))
	for name, b := range cfg.Prompts {
		blocks[name] = catalog.Block{Enabled: b.Enabled, File: b.File}
	}
	return catalog.Settings{
		Root:    cfg.Paths.Prompts,
		Include: cfg.Catalog.Include,
		Exclude: cfg.Catalog.Exclude,
		Blocks:  blocks,
	}
}

// LimitsOf is the run registry's part of a configuration.
func LimitsOf(cfg *config.Config) Limits {
	return Limits{
		MaxConcurrentRuns: cfg.Server.MaxConcurrentRuns,
		AdmissionTimeout:  cfg.Server.AdmissionTimeout,
		ReplyDeadline:     cfg.Server.ReplyDeadline,
		RetainCompleted:   cfg.Server.RetainCompleted,
	}
}

// ReloadFunc re-reads the configuration for a reload and names the
// settings that changed but only apply after a restart.
func ReloadFunc(loader config.Loader, path string, boot *config.Config) catalog.LoadFunc {
	return func(context.Context) (catalog.Settings, []string, error) {
		next, err := loader.Load(path)
		if err != nil {
			return catalog.Settings{}, nil, err
		}
		return SettingsOf(next), boot.DiffUnreloadable(next), nil
	}
}

// Environment is what every run shares: the gateway client and the model
// catalog it served at boot, the live tools from [tools], and the
// directories input_file and output_file may use. Nothing in it changes
// on reload.
type Environment struct {
	Client    *gateway.Client
	Models    []gateway.Model
	Tools     []tools.Tool
	FileRoots []string
	closers   []func()
}

// Close releases the environment's idle connections.
func (e *Environment) Close() {
	for _, c := range e.closers {
		c()
	}
}

// PrepareEnvironment builds the gateway client (its calls timed in m; nil
// makes throwaway metrics), fetches the model catalog (see FetchModels),
// builds the live tools [tools] enables and resolves [paths].files.
func PrepareEnvironment(ctx context.Context, cfg *config.Config, m *Metrics, logger *slog.Logger) (*Environment, error) {
	if m == nil {
		m = NewMetrics()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	env := &Environment{}
	base := gateway.NewTransport()
	httpClient := &http.Client{Transport: m.GatewayTransport(base)}
	env.closers = append(env.closers, base.CloseIdleConnections)
	fail := func(err error) (*Environment, error) {
		env.Close()
		return nil, err
	}
	client, err := gateway.New(gateway.Options{
		BaseURL:       cfg.Gateway.URL,
		APIKey:        cfg.Gateway.APIKey,
		ModelsTimeout: cfg.Gateway.Timeout,
		HTTPClient:    httpClient,
	})
	if err != nil {
		return fail(fmt.Errorf("build the gateway client: %w", err))
	}
	env.Client = client
	if env.Models, err = FetchModels(ctx, client, modelOverrides(cfg.Models), logger); err != nil {
		return fail(err)
	}
	if cfg.Tools.WebFetch {
		wf, err := tools.NewWebFetch(tools.DefaultPolicy(), tools.WithLogger(logger))
		if err != nil {
			return fail(fmt.Errorf("assemble the live tool registry: web_fetch: %w", err))
		}
		env.Tools = append(env.Tools, wf)
		env.closers = append(env.closers, wf.CloseIdleConnections)
	}
	if cfg.Tools.WebSearch {
		ws, err := tools.NewWebSearch(client)
		if err != nil {
			return fail(fmt.Errorf("assemble the live tool registry: web_search: %w", err))
		}
		env.Tools = append(env.Tools, ws)
	}
	if env.FileRoots, err = cfg.FileRoots(); err != nil {
		return fail(err)
	}
	return env, nil
}

// FetchModels reads the gateway's model catalog at boot (DESIGN §3.2). A
// gateway that cannot be reached, times out or answers 5xx is transient:
// the server starts without models (Lua-only prompts and prompts without
// models.need still run) and says so. Any other failure (401, 404, a
// malformed list) is a configuration problem worth refusing to start for.
func FetchModels(ctx context.Context, client *gateway.Client, overrides map[string]gateway.ModelOverride, logger *slog.Logger) ([]gateway.Model, error) {
	cat, err := client.Models(ctx, overrides)
	if err != nil {
		var ge *gateway.Error
		switch {
		case errors.As(err, &ge) && ge.Kind == gateway.KindCancelled:
			return nil, fmt.Errorf("fetch the gateway's model catalog: %w", err)
		case errors.As(err, &ge) && (ge.Kind == gateway.KindTransport || (ge.Kind == gateway.KindStatus && ge.Status >= 500)):
			logger.Warn("gateway model catalog unavailable; serving without it", "kind", ge.Kind.String(), "error", err)
			return nil, nil
		default:
			logger.Error("gateway model catalog could not be loaded; refusing to serve an empty catalog", "error", err)
			return nil, fmt.Errorf("fetch the gateway's model catalog: %w", err)
		}
	}
	for _, s := range cat.Skipped {
		logger.Warn("a model is left out of capability binding", "model", s.ID, "reason", s.Reason)
	}
	logger.Info(fmt.Sprintf("the gateway serves %d model(s) for binding", len(cat.Models)))
	return cat.Models, nil
}
