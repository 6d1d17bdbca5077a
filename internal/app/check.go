package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/runs/pgstore"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// CheckOptions configure Check.
type CheckOptions struct {
	ConfigPath string
	// Logger receives the loading lines; nil discards them.
	Logger *slog.Logger
	// LookupEnv reads the environment for ${VAR}; nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Stdout receives the verdict.
	Stdout io.Writer
	// Offline skips the preflight: the gateway is not contacted and no
	// prompt's needs are bound.
	Offline bool
}

// StepPreflight is the step of a check that contacts the model server and
// binds every prompt's needs against what it serves.
const StepPreflight = "check the model server and the prompts' needs"

// Check loads prompts.toml, resolves its catalog the way Boot would and
// plans the environment. It writes the verdict to Stdout: the prompts that
// resolve, then a note for each HTTP-only setting serving over HTTP would
// refuse. A failure is a *StepError naming the step Boot would fail in;
// its catalog fault lists every fault at once, so an operator fixes them
// in one round.
//
// Unless Offline, it then runs the preflight (see preflight): the things
// serve only discovers once a caller is waiting (a URL without /v1, a key
// the server refuses, a prompt whose model need binds to nothing) fail the
// check here instead.
func Check(ctx context.Context, o CheckOptions) error {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := config.Loader{LookupEnv: o.LookupEnv, Logger: logger}.Load(o.ConfigPath)
	if err != nil {
		return step(StepLoadConfig, err)
	}
	settings := settingsOf(cfg)
	// Relative [paths].prompts entries are read against the config file's
	// directory; the absolute result shows where check looked.
	logger.Debug("resolving the catalog", "prompts_dirs", strings.Join(settings.Roots, ", "), "include", settings.Include, "exclude", settings.Exclude)
	cat, err := catalog.Resolve(ctx, settings, catalog.Reject)
	if err != nil {
		return step(StepResolve, err)
	}
	plan, err := planConfig(cfg)
	if err != nil {
		return step(StepPrepareTools, err)
	}
	// serve opens the run store before it takes a call, over either
	// transport; a URL it cannot even read fails its boot, so it fails here.
	if cfg.Runs.Store != nil {
		if err := pgstore.CheckDSN(cfg.Runs.Store.Reveal()); err != nil {
			return step(StepRunStore, err)
		}
	}
	var problems []error
	if cfg.Server.APIKey == nil {
		problems = append(problems, transport.ErrMissingToken)
	}
	if _, err := transport.ResolveAllowedHosts(cfg.Server.Bind, cfg.Server.AllowedHosts); err != nil {
		problems = append(problems, err)
	}
	if err := transport.CheckAllowedOrigins(cfg.Server.AllowedOrigins); err != nil {
		problems = append(problems, err)
	}

	names := make([]string, 0, cat.Len())
	for _, e := range cat.All() {
		names = append(names, e.Name())
	}
	fmt.Fprintf(o.Stdout, "%s: %d prompt(s) resolve: %s\n", o.ConfigPath, cat.Len(), strings.Join(names, ", "))
	if names := untested(cat); len(names) > 0 {
		fmt.Fprintf(o.Stdout, "note: %d prompt(s) have no tests (write NAME.test.yaml beside each; docs/testing-prompts.md): %s\n", len(names), strings.Join(names, ", "))
	}
	for _, p := range problems {
		// Not faults of the catalog: stdio serves without them.
		fmt.Fprintf(o.Stdout, "note: serving over http would fail: %v\n", p)
	}
	if o.Offline {
		return nil
	}
	if err := preflight(ctx, plan, cat, o.Stdout); err != nil {
		return step(StepPreflight, err)
	}
	return nil
}
