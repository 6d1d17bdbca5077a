package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// cmdCheck loads prompts.toml and resolves its catalog the way serve
// would at boot, without contacting the gateway or binding anything, and
// prints every fault at once so an operator fixes them in one round.
func cmdCheck(ctx context.Context, argv []string, stdout, stderr io.Writer, lookup env) int {
	f, err := parseConfigFlags("check", argv, false)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n\n%s", err, usageText)
		return exitUsage
	}
	path := f.configPath
	// Unlike serve, check defaults to warn: its stdout is the verdict, and
	// info lines about loading would bury it. --log-level or
	// PROMPTFORGE_LOG still choose another level.
	if f.logLevel == "" {
		if v, ok := lookup("PROMPTFORGE_LOG"); ok && v != "" {
			f.logLevel = v
		} else {
			f.logLevel = "warn"
		}
	}
	logger, err := newLogger(stderr, f.logLevel, lookup)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitUsage
	}
	cfg, err := config.Loader{LookupEnv: config.LookupFunc(lookup), Logger: logger}.Load(path)
	if err != nil {
		server.WriteReport(stderr, &server.StepError{Step: server.StepLoadConfig, Err: err})
		return exitFailure
	}
	settings := server.SettingsOf(cfg)
	// A relative [paths].prompts is resolved against the working
	// directory, the usual surprise when check disagrees with a service.
	logger.Debug("resolving the catalog", "prompts_dir", settings.Root, "include", settings.Include, "exclude", settings.Exclude)
	cat, err := catalog.Resolve(ctx, settings, catalog.Reject)
	if err != nil {
		server.WriteReport(stderr, &server.StepError{Step: server.StepResolve, Err: err})
		return exitFailure
	}
	if _, err := cfg.FileRoots(); err != nil {
		server.WriteReport(stderr, &server.StepError{Step: server.StepPrepareTools, Err: err})
		return exitFailure
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
	fmt.Fprintf(stdout, "%s: %d prompt(s) resolve: %s\n", path, cat.Len(), strings.Join(names, ", "))
	for _, p := range problems {
		// Not faults of the catalog: stdio serves without them.
		fmt.Fprintf(stdout, "note: serving over http would fail: %v\n", p)
	}
	return exitOK
}
