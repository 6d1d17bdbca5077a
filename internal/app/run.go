package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/store"
)

// RunOptions configure RunOnce.
type RunOptions struct {
	// Target is a prompt file (a path ending in .md) or, with ConfigPath,
	// a catalog name, matched as run_prompt matches it.
	Target string
	// Args is the prompt's args string, verbatim.
	Args string
	// ConfigPath is prompts.toml, "" for none: then Target must be a file
	// and the gateway comes from PROMPTFORGE_GATEWAY_URL and
	// PROMPTFORGE_GATEWAY_API_KEY.
	ConfigPath string
	// Input is a file to seed the prompt's declared input with; "" for
	// none. Output is where the declared output goes; "" prints it instead
	// of the run's value.
	Input, Output string
	// Logger narrates the run (see engine.LogObserver); nil discards.
	Logger *slog.Logger
	// LookupEnv reads the environment; nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Warnings receives what the server would append to a value as a note
	// (an undeclared --output, an output that was not produced), so the
	// value alone is the answer. nil discards them.
	Warnings io.Writer
	// Dev holds the dev loop's options (dump, capture, status line); the
	// zero value runs as the plain run command does.
	Dev DevOptions
}

// runNarration is how the run command tells a run on stderr: its progress
// at info, author text included, since the operator is the author's
// audience (README: "progress (run and section starts, model turns, Lua
// log() lines) and errors go to stderr").
func runNarration() engine.Narration {
	return engine.Narration{Progress: slog.LevelInfo, AuthorText: true}
}

// RunOnce executes one prompt once, the body of the run command, and
// returns the value to print. It applies the rules run_prompt applies to
// declared input and output, without run_prompt's file confinement: the
// operator names any file they can read or write.
func RunOnce(ctx context.Context, o RunOptions) (string, error) {
	r, err := prepareRun(ctx, o)
	if err != nil {
		return "", err
	}
	defer r.close()
	return r.run(ctx, r.p)
}

// runner is what RunOnce and Watch prepare once and run a prompt with:
// the environment (gateway client, model list, live tools) is built once
// and reused by every rerun.
type runner struct {
	o        RunOptions
	path     string // the prompt file
	p        *prompt.Prompt
	env      *environment
	rank     *ranking
	limits   engine.Limits
	logger   *slog.Logger
	warnings io.Writer
}

// prepareRun loads the prompt and builds the environment.
func prepareRun(ctx context.Context, o RunOptions) (*runner, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	warnings := o.Warnings
	if warnings == nil {
		warnings = io.Discard
	}
	var (
		p    *prompt.Prompt
		path = o.Target
		plan envPlan
		err  error
	)
	if o.ConfigPath != "" {
		p, path, plan, err = fromConfig(ctx, o, logger, lookup)
	} else {
		if p, err = loadPromptFile(o.Target); err == nil {
			plan, err = planEnv(lookup)
		}
	}
	if err != nil {
		return nil, err
	}
	// Arguments are checked before the environment is built: a bad
	// command line should not wait on the model server.
	if _, err := bindRunArgs(p, o.Args); err != nil {
		return nil, err
	}
	applyProcessMemory(plan.limits.ProcessMemory, 1, plan.limits.MaxRunMemory, logger)
	rank, err := plan.ranking(nil, logger)
	if err != nil {
		return nil, fmt.Errorf("prepare the tool environment: %w", err)
	}
	env, err := plan.build(ctx, nil, logger)
	if err != nil {
		rank.Close()
		if o.ConfigPath != "" {
			return nil, fmt.Errorf("prepare the tool environment: %w", err)
		}
		return nil, err
	}
	if o.Dev.CaptureRaw {
		logger.Warn("--capture-raw writes every model turn's request and response, prompts and replies in clear, owner-only; do not commit or share them",
			"dir", filepath.Join(o.Dev.storeDir(path), ".trace"))
	}
	return &runner{o: o, path: path, p: p, env: env, rank: rank, limits: plan.runLimits(), logger: logger, warnings: warnings}, nil
}

// close releases what prepareRun built.
func (r *runner) close() {
	r.env.Close()
	r.rank.Close()
}

// run executes p once with the runner's environment: the plain run
// command's body, plus the dev loop's dump, capture and status line.
func (r *runner) run(ctx context.Context, p *prompt.Prompt) (string, error) {
	o, logger, env := r.o, r.logger, r.env
	bound, err := bindRunArgs(p, o.Args)
	if err != nil {
		return "", err
	}
	st := store.New()
	if o.Input != "" {
		if err := seedInput(st, p, o.Input); err != nil {
			return "", err
		}
	}
	dev, err := r.startDev()
	if err != nil {
		return "", err
	}
	res, err := engine.Run(ctx, p, bound.Args, st, engine.Options{
		Limits:   r.limits,
		Params:   bound.Params,
		Client:   env.client,
		ModelSet: env.models,
		Tools:    env.tools,
		Ranking:  r.rank.run,
		Observer: engine.Observers(engine.LogObserver(logger, runNarration()), dev.observer()),
		Debug:    dev.debug(),
	})
	dev.finish(st)
	// The summary says what the run cost, a failed run too: its tokens
	// were spent all the same.
	status := "completed"
	if err != nil {
		status = "failed"
	}
	logger.Info("run finished", "status", status, "turns", res.Turns,
		"prompt_tokens", res.Tokens.PromptTokens, "completion_tokens", res.Tokens.CompletionTokens)
	if err != nil {
		return "", locate(r.path, err)
	}
	return extractOutput(st, p, res.Value, o.Output, r.warnings)
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
	return nil, locate(path, err)
}

func notAPrompt(path string) error {
	return fmt.Errorf("%s is not a promptforge prompt: its frontmatter declares no `promptforge:` version (add `promptforge: 1`)", path)
}

// fromConfig resolves o.Target through prompts.toml: a .md path is read
// as is, anything else is a catalog name (matched as run_prompt matches
// it). The environment is planned from the configuration, as serve plans
// it; PROMPTFORGE_GATEWAY_* are not read.
func fromConfig(ctx context.Context, o RunOptions, logger *slog.Logger, lookup func(string) (string, bool)) (*prompt.Prompt, string, envPlan, error) {
	conf, err := config.Loader{LookupEnv: lookup, Logger: logger}.Load(o.ConfigPath)
	if err != nil {
		return nil, "", envPlan{}, fmt.Errorf("load the configuration: %w", err)
	}
	var p *prompt.Prompt
	path := o.Target
	if strings.HasSuffix(o.Target, ".md") {
		if p, err = loadPromptFile(o.Target); err != nil {
			return nil, "", envPlan{}, err
		}
	} else {
		// Retain: one broken prompt elsewhere in the catalog must not stop
		// this one from running; a broken target reports its problem.
		cat, err := catalog.Resolve(ctx, settingsOf(conf), catalog.Retain)
		if err != nil {
			return nil, "", envPlan{}, fmt.Errorf("resolve the prompt catalog: %w", err)
		}
		entry, err := cat.Lookup(o.Target)
		if err != nil {
			return nil, "", envPlan{}, err
		}
		if entry.Broken() {
			return nil, "", envPlan{}, fmt.Errorf("prompt %s (%s) cannot run: %s", entry.Name(), entry.Path(), entry.Problem())
		}
		p, path = entry.Prompt(), entry.Path()
	}
	plan, err := planConfig(conf)
	if err != nil {
		return nil, "", envPlan{}, fmt.Errorf("prepare the tool environment: %w", err)
	}
	return p, path, plan, nil
}

// LocatedError is a failure that maps to a place in a prompt file: Line
// is 0 when it maps to the file only. Its message starts with
// "file:line: ", as compilers write theirs, so editors can jump to it.
type LocatedError struct {
	File string
	Line int
	Err  error
}

func (e *LocatedError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *LocatedError) Unwrap() error { return e.Err }

// luaErrorLine finds the file line in a Lua runtime error: chunks are
// compiled so gopher-lua's lines are file lines, and its messages read
// "<chunk name>:<line>: ..." with chunk names such as "section `S`
// prologue" (prompt/blocks.go chunkName).
var luaErrorLine = regexp.MustCompile("(?:^|: )(?:H1|section) `[^`]*`[^:\n]*:([0-9]+): ")

// locate places err in the prompt file at path: a parse error at the
// line it knows, a Lua runtime error at the line of its chunk.
func locate(path string, err error) error {
	var pe *prompt.ParseError
	if errors.As(err, &pe) && pe.Line > 0 {
		return &LocatedError{File: path, Line: pe.Line, Err: err}
	}
	var ee *engine.Error
	if errors.As(err, &ee) && ee.Kind == engine.KindLua {
		if m := luaErrorLine.FindStringSubmatch(err.Error()); m != nil {
			if line, convErr := strconv.Atoi(m[1]); convErr == nil {
				return &LocatedError{File: path, Line: line, Err: err}
			}
		}
	}
	return &LocatedError{File: path, Err: err}
}

// seedInput puts the --input file at the prompt's declared input path,
// with the rules run_prompt applies to input_file but none of its
// confinement: the operator names any file they can read.
func seedInput(st *store.Store, p *prompt.Prompt, path string) error {
	err := engine.SeedDeclaredInput(st, p, func() (string, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read --input: %w", err)
		}
		if !utf8.Valid(data) {
			return "", fmt.Errorf("--input %s is not UTF-8 text", path)
		}
		return string(data), nil
	})
	if errors.Is(err, engine.ErrInputUndeclared) {
		return errors.New("--input was given but the prompt declares no input; drop --input or declare `input: {path, description}` in the frontmatter")
	}
	return err
}

// extractOutput applies the declared-output rules run_prompt applies: the
// store file replaces the value, or goes to outPath. Unlike output_file,
// outPath is written wherever the operator points it, and what the server
// would append to the value as a note goes to warnings instead, so stdout
// carries only the answer.
func extractOutput(st *store.Store, p *prompt.Prompt, value, outPath string, warnings io.Writer) (string, error) {
	out, err := engine.ExtractDeclaredOutput(st, p)
	switch {
	case err != nil:
		return "", err
	case out.Path == "":
		if outPath != "" {
			fmt.Fprintf(warnings, "warning: --output %s ignored: the prompt declares no output\n", outPath)
		}
		return value, nil
	case !out.Produced:
		fmt.Fprintf(warnings, "warning: the prompt declares output %q but did not produce it\n", out.Path)
		return value, nil
	case outPath == "":
		return out.Content, nil
	}
	if err := os.WriteFile(outPath, []byte(out.Content), 0o644); err != nil {
		return "", fmt.Errorf("write --output: %w", err)
	}
	return value, nil
}

// bindRunArgs is the command line's args for p: verbatim for a prompt
// without typed arguments, as before; for one with them, a JSON object of
// them (or nothing, for defaults only), checked by the same rules as
// run_prompt's (prompt.Bind).
func bindRunArgs(p *prompt.Prompt, args string) (prompt.Bound, error) {
	decl := p.Frontmatter.Arguments
	if decl == nil {
		return prompt.Bound{Args: args}, nil
	}
	var given map[string]any
	if args != "" {
		if err := json.Unmarshal([]byte(args), &given); err != nil || given == nil {
			return prompt.Bound{}, fmt.Errorf("prompt %s takes typed arguments (%s): pass them as one JSON object, e.g. '{\"%s\": ...}'",
				strconv.Quote(p.Frontmatter.Name), prompt.DescribeArguments(decl), decl[0].Name)
		}
	}
	return prompt.Bind(p.Frontmatter.Name, decl, given, false)
}
