package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/store"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// runFlags is the parsed command line of "run".
type runFlags struct {
	config, input, output, logLevel string
	target                          string // prompt file or catalog name
	args                            string
}

// usageError is a command line that cannot be run; it maps to exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// parseRunFlags accepts flags anywhere before "--" so that
// `run p.md --input x` and `run --input x p.md` both work; an argument that
// starts with "-" after "--" is positional.
func parseRunFlags(args []string) (runFlags, error) {
	var f runFlags
	var pos []string
	takes := map[string]*string{"--config": &f.config, "--input": &f.input, "--output": &f.output, "--log-level": &f.logLevel}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		dst, ok := takes[name]
		if !ok {
			return f, usageError{fmt.Sprintf("unknown flag %q for run (to pass an argument that starts with '-', put it after --)", a)}
		}
		if !hasVal {
			if i+1 >= len(args) {
				return f, usageError{fmt.Sprintf("flag %s needs a value", name)}
			}
			i++
			val = args[i]
		}
		*dst = val
	}
	switch len(pos) {
	case 0:
		return f, usageError{"run needs a prompt file (ending in .md) or, with --config, a prompt name"}
	case 1:
		f.target = pos[0]
	case 2:
		f.target, f.args = pos[0], pos[1]
	default:
		return f, usageError{fmt.Sprintf("run takes one prompt and at most one args string, got %d extra arguments (quote the args)", len(pos)-2)}
	}
	return f, nil
}

func cmdRun(ctx context.Context, argv []string, stdout, stderr io.Writer, lookup env) int {
	f, err := parseRunFlags(argv)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n\n%s", err, usageText)
		return exitUsage
	}
	logger, err := newLogger(stderr, f.logLevel, lookup)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitUsage
	}
	value, err := runOnce(ctx, f, logger, lookup, stderr)
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "error: %v\n\n%s", err, usageText)
			return exitUsage
		}
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFailure
	}
	io.WriteString(stdout, value)
	if !strings.HasSuffix(value, "\n") {
		io.WriteString(stdout, "\n")
	}
	return exitOK
}

// runOnce executes the prompt named by f and returns the value to print.
func runOnce(ctx context.Context, f runFlags, logger *slog.Logger, lookup env, stderr io.Writer) (string, error) {
	if f.config == "" && !strings.HasSuffix(f.target, ".md") {
		return "", usageError{fmt.Sprintf("%q is not a prompt file (it does not end in .md); naming a catalog prompt needs --config", f.target)}
	}
	var (
		p   *prompt.Prompt
		cfg = engine.Options{Observer: progressObserver{logger}}
		err error
	)
	if f.config != "" {
		var closeEnv func()
		p, closeEnv, err = fromConfig(ctx, f, logger, lookup, &cfg)
		if err != nil {
			return "", err
		}
		defer closeEnv()
	} else {
		if p, err = loadPromptFile(f.target); err != nil {
			return "", err
		}
		closeEnv, err := fromEnv(ctx, lookup, logger, &cfg)
		if err != nil {
			return "", err
		}
		defer closeEnv()
	}

	st := store.New()
	if f.input != "" {
		if err := seedInput(st, p, f.input); err != nil {
			return "", err
		}
	}
	res, err := engine.Run(ctx, p, f.args, st, cfg)
	if err != nil {
		return "", fmt.Errorf("%s: %w", locate(f.target, err), err)
	}
	logger.Info("run finished", "turns", res.Turns)
	return extractOutput(st, p, res.Value, f.output, stderr)
}

// loadPromptFile reads and parses a prompt file given by path.
func loadPromptFile(path string) (*prompt.Prompt, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the prompt: %w", err)
	}
	// Parse first: a parsed prompt says whether it declares a version, so
	// the lenient probe (a second YAML decode) is needed only to tell a
	// broken prompt from a file that is no prompt at all.
	p, err := prompt.Parse(src)
	if err == nil && p.Frontmatter.HasVersion {
		return p, nil
	}
	if err == nil {
		return nil, notAPrompt(path)
	}
	if _, ok := prompt.Version(src); !ok {
		return nil, notAPrompt(path)
	}
	return nil, fmt.Errorf("%s: %w", locate(path, err), err)
}

func notAPrompt(path string) error {
	return fmt.Errorf("%s is not a promptforge prompt: its frontmatter declares no `promptforge:` version (add `promptforge: 1`)", path)
}

// fromConfig resolves f.target through prompts.toml: a .md path is read
// as is, anything else is a catalog name (matched as run_prompt matches
// it). The gateway, its model catalog and the live tools come from the
// configuration, as they do for serve; PROMPTFORGE_GATEWAY_* are not read.
func fromConfig(ctx context.Context, f runFlags, logger *slog.Logger, lookup env, cfg *engine.Options) (*prompt.Prompt, func(), error) {
	conf, err := config.Loader{LookupEnv: config.LookupFunc(lookup), Logger: logger}.Load(f.config)
	if err != nil {
		return nil, nil, fmt.Errorf("load the configuration: %w", err)
	}
	var p *prompt.Prompt
	if strings.HasSuffix(f.target, ".md") {
		if p, err = loadPromptFile(f.target); err != nil {
			return nil, nil, err
		}
	} else {
		// Retain: one broken prompt elsewhere in the catalog must not stop
		// this one from running; a broken target reports its problem.
		cat, err := catalog.Resolve(ctx, server.SettingsOf(conf), catalog.Retain)
		if err != nil {
			return nil, nil, fmt.Errorf("resolve the prompt catalog: %w", err)
		}
		entry, err := cat.Lookup(f.target)
		if err != nil {
			return nil, nil, err
		}
		if entry.Broken() {
			return nil, nil, fmt.Errorf("prompt %s (%s) cannot run: %s", entry.Name(), entry.Path(), entry.Problem())
		}
		p = entry.Prompt()
	}
	envr, err := server.PrepareEnvironment(ctx, conf, nil, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("prepare the tool environment: %w", err)
	}
	cfg.Client, cfg.Models, cfg.Tools = envr.Client, envr.Models, envr.Tools
	return p, envr.Close, nil
}

// locate prefixes an error with file:line when a parse error knows the line.
func locate(path string, err error) string {
	var pe *prompt.ParseError
	if errors.As(err, &pe) && pe.Line > 0 {
		return fmt.Sprintf("%s:%d", path, pe.Line)
	}
	return path
}

// seedInput puts the --input file at the prompt's declared input path,
// with the rules run_prompt applies to input_file but none of its
// confinement: the operator names any file they can read.
func seedInput(st *store.Store, p *prompt.Prompt, path string) error {
	err := server.SeedDeclaredInput(st, p, func() (string, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read --input: %w", err)
		}
		if !utf8.Valid(data) {
			return "", fmt.Errorf("--input %s is not UTF-8 text", path)
		}
		return string(data), nil
	})
	if errors.Is(err, server.ErrInputUndeclared) {
		return errors.New("--input was given but the prompt declares no input; drop --input or declare `input: {path, description}` in the frontmatter")
	}
	return err
}

// extractOutput applies the declared-output rules run_prompt applies: the
// store file replaces the value, or goes to --output. Unlike output_file,
// --output is written wherever the operator points it, and what the
// server would append to the value as a note goes to stderr instead, so
// stdout carries only the answer.
func extractOutput(st *store.Store, p *prompt.Prompt, value, outPath string, stderr io.Writer) (string, error) {
	out, err := server.ExtractDeclaredOutput(st, p)
	switch {
	case err != nil:
		return "", err
	case out.Path == "":
		if outPath != "" {
			fmt.Fprintf(stderr, "warning: --output %s ignored: the prompt declares no output\n", outPath)
		}
		return value, nil
	case !out.Produced:
		fmt.Fprintf(stderr, "warning: the prompt declares output %q but did not produce it\n", out.Path)
		return value, nil
	case outPath == "":
		return out.Content, nil
	}
	if err := os.WriteFile(outPath, []byte(out.Content), 0o644); err != nil {
		return "", fmt.Errorf("write --output: %w", err)
	}
	return value, nil
}

// fromEnv builds the gateway client and live tools from
// PROMPTFORGE_GATEWAY_URL and PROMPTFORGE_GATEWAY_API_KEY, as the reference
// CLI does: web_fetch always; with a gateway, its model catalog and
// web_search too. Neither variable set means no gateway: a Lua-only prompt
// runs, and a model call fails saying what to set. The returned func
// releases the clients' idle connections.
func fromEnv(ctx context.Context, lookup env, logger *slog.Logger, cfg *engine.Options) (func(), error) {
	fetch, err := tools.NewWebFetch(tools.DefaultPolicy(), tools.WithLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("build web_fetch: %w", err)
	}
	cfg.Tools = []tools.Tool{fetch}
	closers := []func(){fetch.CloseIdleConnections}
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	gc, err := gateway.ConfigFromEnv(lookup)
	if errors.Is(err, gateway.ErrNotConfigured) {
		return closeAll, nil
	}
	if err == nil {
		cfg.Client, err = gateway.New(gc)
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	closers = append(closers, cfg.Client.CloseIdleConnections)
	cat, err := cfg.Client.Models(ctx, nil)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("fetch the gateway's model catalog: %w", err)
	}
	cfg.Models = cat.Models
	search, err := tools.NewWebSearch(gc.BaseURL, gc.APIKey, nil)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("build web_search: %w", err)
	}
	cfg.Tools = append(cfg.Tools, search)
	closers = append(closers, search.CloseIdleConnections)
	return closeAll, nil
}

// newLogger builds the stderr logger at --log-level, else PROMPTFORGE_LOG,
// else info.
func newLogger(w io.Writer, flagLevel string, lookup env) (*slog.Logger, error) {
	level := flagLevel
	if level == "" {
		level, _ = lookup("PROMPTFORGE_LOG")
	}
	var l slog.Level
	if level != "" {
		if err := l.UnmarshalText([]byte(level)); err != nil {
			return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// progressObserver reports a run's progress on the logger: the run and each
// section starting, each model turn, and Lua log() lines.
type progressObserver struct{ logger *slog.Logger }

func (o progressObserver) Observe(ev engine.Event) {
	switch ev.Detail {
	case engine.RunStarted, engine.SectionStarted, engine.ModelTurnCompleted, engine.ToolCallSucceeded:
		o.logger.Info(ev.Detail.String(), "section", ev.Section)
	case engine.ModelTurnFailed, engine.ToolCallFailed, engine.RunFailed:
		o.logger.Warn(ev.Detail.String(), "section", ev.Section)
	default:
		if ev.Message != "" {
			o.logger.Info(ev.Message, "section", ev.Section)
			return
		}
		o.logger.Debug(ev.Detail.String(), "section", ev.Section)
	}
}
