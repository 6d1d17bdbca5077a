package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/server"
)

// The components never import config: each takes its own settings, and
// these functions translate prompts.toml into them.

// settingsOf is what catalog resolution needs from a configuration.
func settingsOf(cfg *config.Config) catalog.Settings {
	blocks := make(map[string]catalog.Block, len(cfg.Prompts))
	for name, b := range cfg.Prompts {
		blocks[name] = catalog.Block{Enabled: b.Enabled, File: b.File}
	}
	return catalog.Settings{
		Roots:   cfg.PromptDirs(),
		Include: cfg.Catalog.Include,
		Exclude: cfg.Catalog.Exclude,
		Tools:   cfg.Catalog.Tools,
		Blocks:  blocks,
	}
}

// limitsOf is the run registry's part of a configuration.
func limitsOf(cfg *config.Config) server.Limits {
	return server.Limits{
		MaxConcurrentRuns: cfg.Server.MaxConcurrentRuns,
		AdmissionTimeout:  cfg.Server.AdmissionTimeout,
		ReplyDeadline:     cfg.Server.ReplyDeadline,
		RetainCompleted:   cfg.Server.RetainCompleted,
	}
}

// reloadFunc re-reads the configuration for a reload and names the
// settings that changed but only apply after a restart.
func reloadFunc(loader config.Loader, path string, boot *config.Config) catalog.LoadFunc {
	return func(context.Context) (catalog.Settings, []string, error) {
		next, err := loader.Load(path)
		if err != nil {
			return catalog.Settings{}, nil, err
		}
		return settingsOf(next), boot.DiffUnreloadable(next), nil
	}
}

// ownFiles are the server's files no caller path may name: prompts.toml
// and its env file, and every prompts directory, all absolute.
func ownFiles(configPath string, cfg *config.Config) (secret, prompts []string) {
	for _, p := range []string{configPath, config.EnvFilePath(configPath)} {
		if abs, err := filepath.Abs(p); err == nil {
			secret = append(secret, abs)
		}
	}
	for _, d := range cfg.PromptDirs() {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		prompts = append(prompts, d)
	}
	return secret, prompts
}

// logPaths says, once at boot, which directories the relative paths of
// prompts.toml became: they are read against the config file's directory,
// which is not where an IDE starts the server, so the absolute result is
// what an operator needs to see.
func logPaths(logger *slog.Logger, cfg *config.Config, fileRoots []string) {
	files := "[paths].files entries are read from it"
	if cfg.Paths.Files == nil {
		files = "input_file and output_file use the working directory, as [paths].files is not set"
	}
	logger.Info("prompts directory resolved against the config file's directory; "+files,
		"config_dir", cfg.Dir, "prompts", strings.Join(cfg.PromptDirs(), ", "), "files", strings.Join(fileRoots, ", "))
}

// broadRoots are the roots worth a warning at boot: the filesystem root
// or the user's home directory exposes far more than prompts need. Both
// exist, so a root is compared with symlinks evaluated where it exists
// and as configured where it does not (then it cannot be either).
func broadRoots(roots []string) []string {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	home, _ := os.UserHomeDir()
	var out []string
	for _, r := range roots {
		rr := real(r)
		if rr == string(filepath.Separator) || filepath.Dir(rr) == rr || (home != "" && rr == real(home)) {
			out = append(out, r)
		}
	}
	return out
}
