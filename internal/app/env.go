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
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// environment is what every run shares: the gateway client and its
// model list, the live tools, and the directories input_file and
// output_file may use. Only the model list changes after boot (package
// modelset fetches it again); nothing in it changes on reload.
type environment struct {
	client    *gateway.Client // nil: no gateway was configured
	models    *modelset.Set   // nil: no gateway was configured
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
	// search is where web_search searches ([tools.web_search]); the zero
	// value is the gateway.
	search    config.WebSearch
	fileRoots []string
	// retrieval is [retrieval] (retrieval.go).
	retrieval retrievalPlan
	// referenceCLI is the run command without prompts.toml, which behaves
	// as the reference CLI: a model catalog that cannot be fetched fails
	// the run, whatever the reason, and the fetch is not narrated.
	referenceCLI bool
	// modelRetry is the model list's timing after boot (its Interval and
	// Backoff); zero fields take modelset's defaults. Only tests set it, so
	// a binding miss fetches again without waiting for a clock.
	modelRetry modelset.Options
	// limits is [limits] (memory.go): the run memory ceiling every run
	// gets and the process memory setting; the zero value (the run
	// command without prompts.toml) takes the defaults.
	limits config.Limits
	// runs is [server].max_concurrent_runs, the model turns the gateway
	// transport keeps an idle connection for (gateway.NewTransportFor);
	// zero without prompts.toml.
	runs int
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
			BaseURL:         cfg.Gateway.URL,
			APIKey:          cfg.Gateway.APIKey,
			ModelsTimeout:   cfg.Gateway.Timeout,
			Timeout:         cfg.Gateway.RequestTimeout,
			ThinkingSwitch:  gateway.ThinkingSwitch(cfg.Gateway.ThinkingSwitch),
			MaxRequestBytes: int(cfg.Limits.MaxRequestSize),
		},
		overrides: modelOverrides(cfg.Models),
		webFetch:  cfg.Tools.WebFetch,
		webSearch: cfg.Tools.WebSearch,
		search:    cfg.Tools.Search,
		fileRoots: roots,
		retrieval: retrievalPlan{model: cfg.Retrieval.EmbeddingsModel, cache: cfg.RetrievalCache(), timeout: cfg.Retrieval.Timeout,
			tools: cfg.Retrieval.Tools, models: cfg.Retrieval.Models, prompts: cfg.Retrieval.Prompts},
		limits: cfg.Limits,
		runs:   cfg.Server.MaxConcurrentRuns,
	}, nil
}

// planEnv plans the run command's environment without prompts.toml, from
// PROMPTFORGE_GATEWAY_URL and PROMPTFORGE_GATEWAY_API_KEY as the reference
// CLI does: web_fetch always; with a gateway, its model catalog and
// web_search too. Unless both variables are set (a blank key is unset)
// there is no gateway and no model list: a Lua-only prompt runs, and a
// model call fails saying which variable to set.
func planEnv(lookup func(string) (string, bool)) (envPlan, error) {
	p := envPlan{webFetch: true, referenceCLI: true}
	gc, err := gateway.OptionsFromEnv(lookup)
	switch {
	case errors.Is(err, gateway.ErrNotConfigured):
		// The disabled client puts the "no gateway configured" back.
		p.noGateway = strings.TrimPrefix(err.Error(), gateway.ErrNotConfigured.Error()+": ")
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
	base := gateway.NewTransportFor(p.runs)
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
		if env.models, err = p.fetchModels(ctx, client, m, logger); err != nil {
			return fail(err)
		}
	} else if p.noGateway != "" {
		env.client = gateway.NewDisabled(p.noGateway)
		// No model list either: a need says what to set, not that the
		// model server serves nothing matching.
		_, why := env.client.Models(ctx, nil)
		env.models = modelset.Unavailable(why)
	}
	if p.webFetch {
		wf, err := tools.NewWebFetch(tools.DefaultPolicy(), tools.WithLogger(logger))
		if err != nil {
			return fail(p.wrap("assemble the live tool registry: web_fetch", "build web_fetch", err))
		}
		env.tools = append(env.tools, wf)
		env.closers = append(env.closers, wf.CloseIdleConnections)
	}
	if p.webSearch {
		searcher, err := p.searcher(env.client, httpClient)
		if err != nil {
			return fail(p.wrap("assemble the live tool registry: web_search", "build web_search", err))
		}
		if searcher != nil {
			ws, err := tools.NewWebSearch(searcher)
			if err != nil {
				return fail(p.wrap("assemble the live tool registry: web_search", "build web_search", err))
			}
			env.tools = append(env.tools, ws)
		}
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

// fetchModels makes the holder of the gateway's model list and fetches it
// once (design §3.2). A gateway that cannot be reached, times out or
// answers 5xx is transient: the server starts without models (Lua-only
// prompts and prompts without models.need still run), says so, and a
// binding that finds no model fetches again (package modelset). An empty
// list is a model server with nothing pulled yet, not an error: the
// holder warns what to pull. Any other failure (401, 404, a malformed
// list) is a configuration problem worth refusing to start for. The
// reference CLI (run without prompts.toml) fails on every error and logs
// nothing, as the reference does.
func (p envPlan) fetchModels(ctx context.Context, client *gateway.Client, m *server.Metrics, logger *slog.Logger) (*modelset.Set, error) {
	setting := "[gateway].url"
	if p.referenceCLI {
		setting = gateway.EnvURL
		logger = slog.New(slog.DiscardHandler)
	}
	o := p.modelRetry
	o.Fetch = modelFetch(client, p.overrides, logger)
	o.URL, o.Setting, o.Logger = client.BaseURL(), setting, logger
	o.OnFetch = m.ModelListFetched
	set, err := modelset.New(o)
	if err != nil {
		return nil, err
	}
	_, err = set.Refresh(ctx)
	if err == nil {
		return set, nil
	}
	var ge *gateway.Error
	switch {
	case p.referenceCLI, errors.As(err, &ge) && ge.Kind == gateway.KindCancelled:
	case errors.As(err, &ge) && (ge.Kind == gateway.KindTransport || (ge.Kind == gateway.KindStatus && ge.Status >= 500)):
		// The holder has said so; runs bind once the server answers.
		return set, nil
	default:
		logger.Error("gateway model catalog could not be loaded; refusing to serve an empty catalog", "error", err)
	}
	return nil, fmt.Errorf("fetch the gateway's model catalog: %w", err)
}

// modelFetch is the holder's fetch: the gateway's list with the [models]
// overrides merged. A model left out of binding is logged once, when it
// first is, not on every refresh; the holder calls it one fetch at a
// time, so the record of what was said needs no lock.
func modelFetch(client *gateway.Client, overrides map[string]gateway.ModelOverride, logger *slog.Logger) func(context.Context) (gateway.Catalog, error) {
	said := map[gateway.SkippedModel]bool{}
	saidUnmatched := map[gateway.UnmatchedOverride]bool{}
	saidUnserved := ""
	return func(ctx context.Context) (gateway.Catalog, error) {
		cat, err := client.Models(ctx, overrides)
		if err != nil {
			return cat, err
		}
		for _, s := range cat.Skipped {
			if !said[s] {
				said[s] = true
				logger.Warn("a model is left out of capability binding", "model", s.ID, "reason", s.Reason)
			}
		}
		misnamed := gateway.Misnamed(cat.Unmatched)
		for _, u := range misnamed {
			if !saidUnmatched[u] {
				saidUnmatched[u] = true
				logger.Warn("a [models] table matches no served model and has no effect", "model", u.ID, "closest", u.Closest, "fix", u.Problem())
			}
		}
		// Tables for models nobody pulled are usual (the example describes
		// several common ones): one info line names them, once.
		if unserved := unservedIDs(cat.Unmatched); unserved != "" && unserved != saidUnserved {
			saidUnserved = unserved
			logger.Info("[models] describes models the gateway does not serve; they are not bound until it does", "models", unserved)
		}
		return cat, nil
	}
}

// unservedIDs lists, comma-separated, the [models] ids the server does not
// serve and that resemble none it does ("" when there are none).
func unservedIDs(us []gateway.UnmatchedOverride) string {
	var ids []string
	for _, u := range us {
		if u.Closest == "" {
			ids = append(ids, u.ID)
		}
	}
	return strings.Join(ids, ", ")
}

// searcher is what web_search searches with: the gateway's
// /tools/web_search, or the SearXNG or Brave API [tools.web_search]
// names, on the same timed transport as every gateway call (the URL is
// the operator's, so web_fetch's address rules do not apply to it). nil
// when the gateway is the provider and none is configured.
func (p envPlan) searcher(client *gateway.Client, hc *http.Client) (tools.Searcher, error) {
	switch p.search.Provider {
	case "", config.SearchGateway:
		if p.gateway == nil {
			return nil, nil
		}
		return client, nil
	}
	return gateway.NewSearchBackend(gateway.SearchOptions{
		Provider: gateway.SearchProvider(p.search.Provider), URL: p.search.URL, APIKey: p.search.APIKey, HTTPClient: hc,
	})
}
