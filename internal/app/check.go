package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
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
}

// Check loads prompts.toml, resolves its catalog the way Boot would and
// plans the environment, without contacting the gateway or binding
// anything. It writes the verdict to Stdout: the prompts that resolve,
// then a note for each HTTP-only setting serving over HTTP would refuse.
// A failure is a *StepError naming the step Boot would fail in; its
// catalog fault lists every fault at once, so an operator fixes them in
// one round.
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
	if _, err := planConfig(cfg); err != nil {
		return step(StepPrepareTools, err)
	}
	var problems []error
	if cfg.Server.APIKey == nil {
		problems = append(problems, transport.ErrMissingToken)
	}
	if _, err := transport.ResolveAllowedHosts(cfg.Server.Bind, cfg.Server.AllowedHosts); err != nil {
		problems = append(problems, err)
	}

	names := make([]string, 0, cat.Len())
	for _, e := range cat.All() {
		names = append(names, e.Name())
	}
	fmt.Fprintf(o.Stdout, "%s: %d prompt(s) resolve: %s\n", o.ConfigPath, cat.Len(), strings.Join(names, ", "))
	for _, p := range problems {
		// Not faults of the catalog: stdio serves without them.
		fmt.Fprintf(o.Stdout, "note: serving over http would fail: %v\n", p)
	}
	return nil
}
