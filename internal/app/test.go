package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/prompttest"
)

// TestOptions configure Test.
type TestOptions struct {
	// Paths are directories, prompt files, test files or prompts.toml
	// files; a prompts.toml stands for the tests beside its prompts.
	Paths []string
	// Run selects tests by a regular expression over "<prompt>/<test>".
	Run string
	// Update records the current outcomes as the expectations.
	Update bool
	// Verbose lists passing tests too.
	Verbose bool
	// Stdout receives the report.
	Stdout io.Writer
	// Logger receives the configuration's loading lines; nil discards.
	Logger *slog.Logger
	// LookupEnv reads the environment for a prompts.toml's ${VAR}; nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// ErrTestsFailed is returned by Test when a test failed; the report has
// said which.
var ErrTestsFailed = fmt.Errorf("prompt tests failed")

// Test runs prompt tests (package prompttest) on a scripted gateway. It
// fails with ErrTestsFailed when a test fails, and with another error when
// a path, a test file or a prompt cannot be read.
func Test(ctx context.Context, o TestOptions) error {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var re *regexp.Regexp
	if o.Run != "" {
		var err error
		if re, err = regexp.Compile(o.Run); err != nil {
			return fmt.Errorf("-run %q is not a regular expression: %w", o.Run, err)
		}
	}
	paths := []string{}
	var files []string
	for _, p := range o.Paths {
		if !strings.HasSuffix(p, ".toml") {
			paths = append(paths, p)
			continue
		}
		found, err := catalogTests(ctx, p, logger, o.LookupEnv)
		if err != nil {
			return err
		}
		files = append(files, found...)
	}
	if len(paths) > 0 {
		found, err := prompttest.Find(paths)
		if err != nil {
			return err
		}
		files = append(files, found...)
	}
	sum, err := prompttest.Run(ctx, prompttest.Options{Files: files, Run: re, Update: o.Update, Verbose: o.Verbose, Out: o.Stdout})
	if err != nil {
		return err
	}
	if sum.Failed > 0 {
		return ErrTestsFailed
	}
	return nil
}

// catalogTests lists the test files beside the prompts of the catalog
// configPath describes (Retain: a broken prompt has no tests to run but
// must not hide the others').
func catalogTests(ctx context.Context, configPath string, logger *slog.Logger, lookup func(string) (string, bool)) ([]string, error) {
	cat, err := resolveForTests(ctx, configPath, logger, lookup)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range cat.All() {
		if prompttest.Has(e.Path()) {
			files = append(files, prompttest.For(e.Path()))
		}
	}
	return files, nil
}

func resolveForTests(ctx context.Context, configPath string, logger *slog.Logger, lookup func(string) (string, bool)) (*catalog.Catalog, error) {
	cfg, err := config.Loader{LookupEnv: lookup, Logger: logger}.Load(configPath)
	if err != nil {
		return nil, fmt.Errorf("load the configuration: %w", err)
	}
	cat, err := catalog.Resolve(ctx, settingsOf(cfg), catalog.Retain)
	if err != nil {
		return nil, fmt.Errorf("resolve the prompt catalog: %w", err)
	}
	return cat, nil
}

// untested names the prompts of cat without a test file, for check.
func untested(cat *catalog.Catalog) []string {
	var names []string
	for _, e := range cat.All() {
		if !prompttest.Has(e.Path()) {
			names = append(names, e.Name())
		}
	}
	return names
}
