package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// environment is what every run shares: the gateway client and the model
// catalog it served when the environment was built, the live tools, and
// the directories input_file and output_file may use. Nothing in it
// changes on reload.
type environment struct {
	client    *gateway.Client // nil: no gateway was configured
	models    []gateway.Model
	tools     []tools.Tool
	fileRoots []string
	closers   []func()
}

// Close releases the environment's idle connections.
func (e *environment) Close() {
	for _, c := range e.closers {
		c()
	}
}

// envPlan is what an environment is built from. Planning reads settings
// (and resolves [paths].files) but never the network, so check plans what
// serve would build and stops there; serve and run build from a plan. It
// is the one environment assembler of the process: prompts.toml and the
// run command's PROMPTFORGE_GATEWAY_* variables are two ways to fill it.
type envPlan struct {
	// gateway is the client's configuration; nil when no gateway is
	// configured (the run command without prompts.toml or variables).
	gateway *gateway.Options
	// noGateway is why there is no gateway, for the disabled client a run
	// gets when gateway is nil: the engine reads no environment itself,
	// so a model call fails saying what to set.
	noGateway string
	overrides map[string]gateway.ModelOverride
	webFetch  bool
	webSearch bool
	fileRoots []string
	// referenceCLI is the run command without prompts.toml, which behaves
	// as the reference CLI: a model catalog that cannot be fetched fails
	// the run, whatever the reason, and the fetch is not narrated.
	referenceCLI bool
}

// planConfig plans the environment prompts.toml describes: its gateway
// and [models] overrides, the live tools [tools] enables and the file
// roots of [paths].files.
func planConfig(cfg *config.Config) (envPlan, error) {
	roots, err := cfg.FileRoots()
	if err != nil {
		return envPlan{}, err
	}
	return envPlan{
		gateway: &gateway.Options{
			BaseURL:       cfg.Gateway.URL,
			APIKey:        cfg.Gateway.APIKey,
			ModelsTimeout: cfg.Gateway.Timeout,
		},
		overrides: modelOverrides(cfg.Models),
		webFetch:  cfg.Tools.WebFetch,
		webSearch: cfg.Tools.WebSearch,
		fileRoots: roots,
	}, nil
}

// planEnv plans the run command's environment without prompts.toml, from
// PROMPTFORGE_GATEWAY_URL and PROMPTFORGE_GATEWAY_API_KEY as the reference
// CLI does: web_fetch always; with a gateway, its model catalog and
// web_search too. Neither variable set means no gateway: a Lua-only prompt
// runs, and a model call fails saying what to set.
func planEnv(lookup func(string) (string, bool)) (envPlan, error) {
	p := envPlan{webFetch: true, referenceCLI: true}
	gc, err := gateway.OptionsFromEnv(lookup)
	switch {
	case errors.Is(err, gateway.ErrNotConfigured):
		p.noGateway = "set " + gateway.EnvURL + " and " + gateway.EnvAPIKey
		return p, nil
	case err != nil:
		return envPlan{}, err
	}
	p.gateway, p.webSearch = &gc, true
	return p, nil
}

// build builds the gateway client (its calls timed in m; nil makes
// throwaway metrics), fetches the model catalog (see fetchModels) and
// builds the live tools. The returned environment's Close releases what
// it holds; on failure nothing is left open.
func (p envPlan) build(ctx context.Context, m *server.Metrics, logger *slog.Logger) (*environment, error) {
	if m == nil {
		m = server.NewMetrics()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	env := &environment{fileRoots: p.fileRoots}
	fail := func(err error) (*environment, error) {
		env.Close()
		return nil, err
	}
	base := gateway.NewTransport()
	httpClient := &http.Client{Transport: m.GatewayTransport(base)}
	env.closers = append(env.closers, base.CloseIdleConnections)
	if p.gateway != nil {
		gc := *p.gateway
		gc.HTTPClient = httpClient
		client, err := gateway.New(gc)
		if err != nil {
			return fail(p.wrap("build the gateway client", "", err))
		}
		env.client = client
		if env.models, err = fetchModels(ctx, client, p.overrides, p.referenceCLI, logger); err != nil {
			return fail(err)
		}
	} else if p.noGateway != "" {
		env.client = gateway.NewDisabled(p.noGateway)
	}
	if p.webFetch {
		wf, err := tools.NewWebFetch(tools.DefaultPolicy(), tools.WithLogger(logger))
		if err != nil {
			return fail(p.wrap("assemble the live tool registry: web_fetch", "build web_fetch", err))
		}
		env.tools = append(env.tools, wf)
		env.closers = append(env.closers, wf.CloseIdleConnections)
	}
	if p.webSearch && p.gateway != nil {
		ws, err := tools.NewWebSearch(env.client)
		if err != nil {
			return fail(p.wrap("assemble the live tool registry: web_search", "build web_search", err))
		}
		env.tools = append(env.tools, ws)
	}
	return env, nil
}

// wrap words a build failure: as serve words it, or, for the reference
// CLI, as the run command always has ("" leaves err as it is).
func (p envPlan) wrap(serve, cli string, err error) error {
	what := serve
	if p.referenceCLI {
		what = cli
	}
	if what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// fetchModels reads the gateway's model catalog (design §3.2). A gateway
// that cannot be reached, times out or answers 5xx is transient: the
// server starts without models (Lua-only prompts and prompts without
// models.need still run) and says so. Any other failure (401, 404, a
// malformed list) is a configuration problem worth refusing to start for.
// strict (the run command without prompts.toml) fails on every error and
// logs nothing, as the reference CLI does.
func fetchModels(ctx context.Context, client *gateway.Client, overrides map[string]gateway.ModelOverride, strict bool, logger *slog.Logger) ([]gateway.Model, error) {
	cat, err := client.Models(ctx, overrides)
	if err != nil {
		var ge *gateway.Error
		switch {
		case strict, errors.As(err, &ge) && ge.Kind == gateway.KindCancelled:
			return nil, fmt.Errorf("fetch the gateway's model catalog: %w", err)
		case errors.As(err, &ge) && (ge.Kind == gateway.KindTransport || (ge.Kind == gateway.KindStatus && ge.Status >= 500)):
			logger.Warn("gateway model catalog unavailable; serving without it", "kind", ge.Kind.String(), "error", err)
			return nil, nil
		default:
			logger.Error("gateway model catalog could not be loaded; refusing to serve an empty catalog", "error", err)
			return nil, fmt.Errorf("fetch the gateway's model catalog: %w", err)
		}
	}
	if strict {
		return cat.Models, nil
	}
	unserved, skipped := splitSkipped(cat.Skipped, overrides)
	for _, s := range skipped {
		logger.Warn("a model is left out of capability binding", "model", s.ID, "reason", s.Reason)
	}
	if len(unserved) > 0 {
		logger.Info("[models] describes models the gateway does not serve; they are not bound until it does", "models", strings.Join(unserved, ", "))
	}
	logger.Info("the gateway serves models for binding", "models", len(cat.Models))
	return cat.Models, nil
}

// splitSkipped separates, among the models the catalog left out, the ids a
// complete [models."<id>"] table describes but the gateway does not serve
// (usual: the example describes the common Ollama models, of which a user
// pulls one or two) from the rest, each of which needs the operator.
func splitSkipped(skipped []gateway.SkippedModel, overrides map[string]gateway.ModelOverride) (unserved []string, rest []gateway.SkippedModel) {
	for _, s := range skipped {
		if o, ok := overrides[s.ID]; ok && o.Description != "" && o.Context != 0 && o.Thinking != "" {
			unserved = append(unserved, s.ID)
			continue
		}
		rest = append(rest, s)
	}
	return unserved, rest
}
