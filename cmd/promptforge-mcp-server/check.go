package main

import (
	"context"
	"io"

	"github.com/promptforge-go/promptforge/internal/app"
)

// cmdCheck loads prompts.toml and resolves its catalog the way serve
// would at boot, printing every fault at once so an operator fixes them in
// one round; then, unless --offline, it contacts the model server and
// binds every prompt's needs against what it serves (app.Check).
func cmdCheck(ctx context.Context, argv []string, stdout, stderr io.Writer, lookup env) int {
	f, err := parseConfigFlags("check", argv, false)
	// Unlike serve, check defaults to warn: its stdout is the verdict, and
	// info lines about loading would bury it. --log-level or
	// PROMPTFORGE_LOG still choose another level.
	logger, code := prologue(stderr, lookup, err, f.logLevel, "warn")
	if logger == nil {
		return code
	}
	err = app.Check(ctx, app.CheckOptions{ConfigPath: f.configPath, Logger: logger, LookupEnv: lookup, Stdout: stdout, Offline: f.offline})
	if err != nil {
		app.WriteReport(stderr, err)
		return exitFailure
	}
	return exitOK
}
