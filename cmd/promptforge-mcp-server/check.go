package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/server"
)

// cmdCheck loads prompts.toml and resolves its catalog the way serve
// would at boot, without contacting the gateway or binding anything, and
// prints every fault at once so an operator fixes them in one round.
func cmdCheck(ctx context.Context, argv []string, stdout, stderr io.Writer, lookup env) int {
	if len(argv) != 1 || strings.HasPrefix(argv[0], "-") && argv[0] != "-" {
		fmt.Fprintf(stderr, "error: check takes exactly one argument, the path of prompts.toml\n\n%s", usageText)
		return exitUsage
	}
	path := argv[0]
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := config.Loader{LookupEnv: config.LookupFunc(lookup), Logger: logger}.Load(path)
	if err != nil {
		server.WriteReport(stderr, &server.StepError{Step: server.StepLoadConfig, Err: err})
		return exitFailure
	}
	cat, err := catalog.Resolve(ctx, server.SettingsOf(cfg), catalog.Reject)
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
		problems = append(problems, server.ErrMissingToken)
	}
	if _, err := server.ResolveAllowedHosts(cfg.Server.Bind, cfg.Server.AllowedHosts); err != nil {
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
