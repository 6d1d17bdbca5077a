package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/promptforge-go/promptforge/internal/humantime"
	"github.com/promptforge-go/promptforge/internal/names"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// maxConfigBytes caps prompts.toml (and its env file): a configuration is
// small, and reading an arbitrary file without a bound could exhaust
// memory.
const maxConfigBytes = 4 << 20

// errNotUTF8File is the cause of a KindRead error for a file that is not
// UTF-8 text.
var errNotUTF8File = errors.New("the file is not valid UTF-8 text")

// Loader loads prompts.toml with an injectable environment, so tests can
// supply variables without touching the process environment.
type Loader struct {
	// LookupEnv reads the process environment; nil means os.LookupEnv.
	// It is consulted before the env file.
	LookupEnv LookupFunc
	// Logger receives the env-file warnings; nil discards them.
	Logger *slog.Logger
}

// Load reads and validates the configuration at path with the environment
// and the env file beside it (EnvFilePath). It runs the whole pipeline of
// mcp-server §2.1, in its order: read (capped at
// 4 MiB), load the env file into memory, parse the TOML, expand ${VAR} in
// string values, decode refusing unknown keys, validate. Every failure is
// an *Error.
func (l Loader) Load(path string) (*Config, error) {
	processEnv := l.LookupEnv
	if processEnv == nil {
		processEnv = os.LookupEnv
	}
	logger := l.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	data, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	envPath := EnvFilePath(path)
	fileEnv := readEnvFile(envPath, processEnv, logger)
	lookup := func(name string) (string, bool) {
		if v, ok := processEnv(name); ok {
			return v, true
		}
		v, ok := fileEnv[name]
		return v, ok
	}
	cfg, err := parse(data, lookup, path, envPath)
	if err != nil {
		return nil, err
	}
	cfg.Path = path
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, &Error{Kind: KindRead, Path: path, Err: fmt.Errorf("find the config file's directory, which relative paths are read against: %w", err)}
	}
	cfg.Dir = dir
	return cfg, nil
}

// Parse validates configuration text with variables from lookup (nil means no
// variable is set). It applies the same rules as [Loader.Load] minus the file
// steps: no size cap, no env file.
func Parse(data []byte, lookup LookupFunc) (*Config, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	return parse(data, lookup, "", "")
}

// readConfig reads the configuration file, refusing one over the cap and
// one that is not UTF-8.
func readConfig(path string) ([]byte, error) {
	readErr := func(err error) error {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// The path is already in our message; keep the OS reason.
			err = pe.Err
		}
		return &Error{Kind: KindRead, Path: path, Err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, readErr(err)
	}
	defer f.Close()
	data, err := readLimited(f)
	if err != nil {
		return nil, readErr(err)
	}
	if len(data) > maxConfigBytes {
		return nil, &Error{Kind: KindParse, Detail: fmt.Sprintf("config file %s exceeds the %d-byte limit", path, maxConfigBytes)}
	}
	if !utf8.Valid(data) {
		return nil, readErr(errNotUTF8File)
	}
	return data, nil
}

// readLimited reads at most one byte more than the cap, which is enough to
// tell "exactly the cap" from "over it" without reading a huge file.
func readLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, maxConfigBytes+1))
}

// parser carries what error messages need to say where a problem is.
type parser struct {
	path    string // config file, "" for Parse
	envPath string // env file, "" for Parse
	lines   keyLines
}

func (p *parser) fail(at tomlPath, detail string) *Error {
	return &Error{Kind: KindParse, Path: p.path, Line: p.lines.line(at), Key: keyName(at), Detail: detail}
}

// interpolationError turns a scanner failure on the value at path into the
// kind mcp-server §2.1 gives it.
func (p *parser) interpolationError(at tomlPath, err error) error {
	line := p.lines.line(at)
	var ue *unresolvedError
	if errors.As(err, &ue) {
		where := "the env file beside the configuration"
		if p.envPath != "" {
			where = p.envPath
		}
		return &Error{Kind: KindUnresolvedVar, Line: line, Key: keyName(at), Var: ue.name,
			Detail: "set it in the process environment or in " + where}
	}
	detail := err.Error()
	if errors.Is(err, errUnclosed) {
		detail += `; close it with "}", or write "$$" for a literal "$"`
	}
	return &Error{Kind: KindInterpolation, Line: line, Key: keyName(at), Detail: detail, Err: err}
}

func parse(data []byte, lookup LookupFunc, path, envPath string) (*Config, error) {
	p := &parser{path: path, envPath: envPath}

	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, p.syntaxError(err)
	}
	p.lines = indexKeyLines(data)

	if err := p.interpolateDocument(doc, lookup); err != nil {
		return nil, err
	}

	// Decode the file as written to find unknown keys and wrong types: the
	// decoder's positions are only right for the original bytes, and
	// interpolation changes no value's type or key.
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var check rawConfig
	if err := dec.Decode(&check); err != nil {
		return nil, p.decodeError(err)
	}

	// Decode the expanded document for the values.
	expanded, err := toml.Marshal(doc)
	if err != nil {
		return nil, &Error{Kind: KindParse, Path: path, Detail: "re-encode the expanded configuration: " + err.Error(), Err: err}
	}
	var raw rawConfig
	if err := toml.Unmarshal(expanded, &raw); err != nil {
		return nil, &Error{Kind: KindParse, Path: path, Detail: "decode the expanded configuration: " + err.Error(), Err: err}
	}
	return p.build(&raw)
}

// interpolateDocument expands ${VAR} everywhere, after first giving
// [server].api_key its exception (mcp-server §2.5): an unset variable there
// drops the key, because stdio serving needs no token.
func (p *parser) interpolateDocument(doc map[string]any, lookup LookupFunc) error {
	apiKeyPath := tomlPath{"server", "api_key"}
	if server, ok := doc["server"].(map[string]any); ok {
		if v, ok := server["api_key"].(string); ok {
			out, err := interpolate(v, lookup)
			var ue *unresolvedError
			switch {
			case errors.As(err, &ue):
				delete(server, "api_key")
			case err != nil:
				return p.interpolationError(apiKeyPath, err)
			case !utf8.ValidString(out):
				return p.interpolationError(apiKeyPath, errNotUTF8)
			default:
				server["api_key"] = out
			}
		}
	}
	_, err := interpolateTree(doc, nil, lookup, apiKeyPath, p.interpolationError)
	return err
}

// syntaxError reports a document that is not TOML.
func (p *parser) syntaxError(err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return &Error{Kind: KindParse, Path: p.path, Line: line,
			Detail: fmt.Sprintf("invalid TOML at column %d: %s", col, strings.TrimPrefix(de.Error(), "toml: ")), Err: err}
	}
	return &Error{Kind: KindParse, Path: p.path, Detail: "invalid TOML: " + err.Error(), Err: err}
}

// decodeError explains an unknown key or a value of the wrong type.
func (p *parser) decodeError(err error) error {
	var sme *toml.StrictMissingError
	if errors.As(err, &sme) && len(sme.Errors) > 0 {
		first := &sme.Errors[0]
		line, _ := first.Position()
		e := &Error{Kind: KindParse, Path: p.path, Line: line, Key: keyName(tomlPath(first.Key())),
			Detail: unknownKeyDetail(first), Err: err}
		if len(sme.Errors) > 1 {
			var more []string
			for i := range sme.Errors[1:] {
				de := &sme.Errors[i+1]
				l, _ := de.Position()
				more = append(more, fmt.Sprintf("%s (line %d)", keyName(tomlPath(de.Key())), l))
			}
			e.Detail += "; also unknown: " + strings.Join(more, ", ")
		}
		return e
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		key := tomlPath(de.Key())
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		detail := msg
		if want := expectedType(key); want != "" && strings.HasPrefix(msg, "cannot decode") {
			detail = keyName(key) + " must be " + want
		} else if len(key) > 0 {
			detail = keyName(key) + ": " + msg
		}
		return &Error{Kind: KindParse, Path: p.path, Line: line, Key: keyName(key), Detail: detail, Err: err}
	}
	return &Error{Kind: KindParse, Path: p.path, Detail: err.Error(), Err: err}
}

// unknownKeyDetail names the unknown key and what its table takes instead.
func unknownKeyDetail(de *toml.DecodeError) string {
	key := tomlPath(de.Key())
	if len(key) == 0 {
		return "unknown key"
	}
	table := key[:len(key)-1]
	what := "unknown key "
	if len(key) == 1 && strings.Contains(de.Error(), "table") {
		what = "unknown table "
	}
	detail := what + keyName(key)
	allowed, ok := tableKeys(table)
	if !ok {
		return detail
	}
	if len(table) == 0 {
		return detail + ": the file takes [server], [paths], [gateway], [catalog], [tools], [runs], [retrieval], [prompts.NAME] and [models.\"<id>\"]"
	}
	return detail + ": " + keyName(table) + " takes " + strings.Join(allowed, ", ")
}

// build applies defaults and the validating conversions of
// mcp-server §2.2–2.3 and design §3.2–3.4.
func (p *parser) build(raw *rawConfig) (*Config, error) {
	cfg := defaults()

	if raw.Server == nil {
		return nil, p.fail(tomlPath{"server"}, "the [server] table is missing: add it (an empty [server] takes every default)")
	}
	if err := p.buildServer(raw.Server, &cfg.Server); err != nil {
		return nil, err
	}
	if raw.Paths != nil {
		if err := p.buildPaths(raw.Paths, &cfg.Paths); err != nil {
			return nil, err
		}
	}
	if raw.Gateway == nil {
		return nil, p.fail(tomlPath{"gateway"}, "the [gateway] table is missing: add it with url and api_key")
	}
	if err := p.buildGateway(raw.Gateway, &cfg.Gateway); err != nil {
		return nil, err
	}
	if raw.Catalog != nil {
		var err error
		if cfg.Catalog.Include, err = p.patterns(raw.Catalog.Include, "include"); err != nil {
			return nil, err
		}
		if cfg.Catalog.Exclude, err = p.patterns(raw.Catalog.Exclude, "exclude"); err != nil {
			return nil, err
		}
		if cfg.Catalog.Tools, err = p.toolGlobs(raw.Catalog.Tools); err != nil {
			return nil, err
		}
	}
	if raw.Tools != nil {
		cfg.Tools.WebFetch = deref(raw.Tools.WebFetch, false)
		if err := p.buildWebSearch(raw.Tools.WebSearch, &cfg.Tools.WebSearch, &cfg.Tools.Search); err != nil {
			return nil, err
		}
	}
	if raw.Retrieval != nil {
		if err := p.buildRetrieval(raw.Retrieval, &cfg.Retrieval); err != nil {
			return nil, err
		}
	}
	if err := p.buildRuns(raw.Runs, &cfg.Runs); err != nil {
		return nil, err
	}
	if raw.Limits != nil {
		if err := p.buildLimits(raw.Limits, &cfg.Limits); err != nil {
			return nil, err
		}
	}
	if raw.Observability != nil {
		if err := p.buildObservability(raw.Observability, &cfg.Observability); err != nil {
			return nil, err
		}
	}
	if err := p.buildPrompts(raw.Prompts, cfg.Prompts); err != nil {
		return nil, err
	}
	if err := p.buildModels(raw.Models, cfg.Models); err != nil {
		return nil, err
	}

	// The credential checks run last, as in the reference.
	if v := raw.Server.APIKey; v != nil {
		s, err := secret.New(*v)
		if err != nil {
			at := tomlPath{"server", "api_key"}
			return nil, &Error{Kind: KindEmptyToken, Line: p.lines.line(at), Key: keyName(at),
				Detail: "[server].api_key must not be empty"}
		}
		cfg.Server.APIKey = &s
	}
	s, err := secret.New(*raw.Gateway.APIKey)
	if err != nil {
		return nil, p.fail(tomlPath{"gateway", "api_key"}, "[gateway].api_key must not be empty")
	}
	cfg.Gateway.APIKey = s
	return cfg, nil
}

func deref[T any](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}

func (p *parser) buildServer(r *rawServer, s *Server) error {
	at := func(k string) tomlPath { return tomlPath{"server", k} }
	if r.Bind != nil {
		ap, err := parseBind(*r.Bind)
		if err != nil {
			return p.fail(at("bind"), err.Error())
		}
		s.Bind = ap
	}
	if r.AllowedHosts != nil {
		s.AllowedHosts = slices.Clone(*r.AllowedHosts)
	}
	if r.AllowedOrigins != nil {
		s.AllowedOrigins = slices.Clone(*r.AllowedOrigins)
	}
	for _, c := range []struct {
		key, what string
		raw       *int64
		dst       *int
	}{
		{"max_concurrent_runs", "how many runs may execute at once", r.MaxConcurrentRuns, &s.MaxConcurrentRuns},
		{"max_sessions", "how many HTTP sessions may be open at once", r.MaxSessions, &s.MaxSessions},
	} {
		if c.raw == nil {
			continue
		}
		if n := *c.raw; n < 1 || n > math.MaxInt32 {
			return p.fail(at(c.key), fmt.Sprintf("[server].%s must be at least 1 (it is %s): %d", c.key, c.what, n))
		}
		*c.dst = int(*c.raw)
	}
	for _, d := range []struct {
		key string
		raw *string
		dst *time.Duration
	}{
		{"admission_timeout", r.AdmissionTimeout, &s.AdmissionTimeout},
		{"reply_deadline", r.ReplyDeadline, &s.ReplyDeadline},
		{"retain_completed", r.RetainCompleted, &s.RetainCompleted},
		{"watch_debounce", r.WatchDebounce, &s.WatchDebounce},
	} {
		if d.raw == nil {
			continue
		}
		v, err := humantime.Parse(*d.raw)
		if err != nil {
			return p.fail(at(d.key), fmt.Sprintf("[server].%s is not a duration: %v", d.key, err))
		}
		*d.dst = v
	}
	s.Watch = deref(r.Watch, DefaultWatch)
	return nil
}

func (p *parser) buildPaths(r *rawPaths, dst *Paths) error {
	prompts, err := p.promptDirs(r.Prompts)
	if err != nil {
		return err
	}
	dst.Prompts = prompts
	if r.Files != nil {
		dst.Files = make([]string, 0, len(*r.Files))
		for _, f := range *r.Files {
			if strings.TrimSpace(f) == "" {
				return p.fail(tomlPath{"paths", "files"}, "[paths].files entries must not be empty: list the directories input_file and output_file may use")
			}
			if err := checkTilde("[paths].files", f); err != nil {
				return p.fail(tomlPath{"paths", "files"}, err.Error())
			}
			dst.Files = append(dst.Files, f)
		}
	}
	return nil
}

// promptDirs reads [paths].prompts: one directory as a string (the
// reference's form), or several as an array of strings (design §0).
func (p *parser) promptDirs(v any) ([]string, error) {
	at := tomlPath{"paths", "prompts"}
	var dirs []string
	switch t := v.(type) {
	case nil:
		return []string{DefaultPromptsDir}, nil
	case string:
		dirs = []string{t}
	case []any:
		if len(t) == 0 {
			return nil, p.fail(at, "[paths].prompts must name at least one directory: leave the key out for the default \"prompts\"")
		}
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, p.fail(at, fmt.Sprintf("[paths].prompts must be a string or an array of strings: entry %d is %s", i+1, tomlTypeName(e)))
			}
			dirs = append(dirs, s)
		}
	default:
		return nil, p.fail(at, fmt.Sprintf("[paths].prompts must be a string or an array of strings, such as \"prompts\" or [\"/team/prompts\", \"prompts\"]: it is %s", tomlTypeName(v)))
	}
	for _, d := range dirs {
		if strings.TrimSpace(d) == "" {
			return nil, p.fail(at, `[paths].prompts must not name an empty directory: write "." for the config file's directory`)
		}
		if err := checkTilde("[paths].prompts", d); err != nil {
			return nil, p.fail(at, err.Error())
		}
	}
	return dirs, nil
}

// checkTilde refuses a path that starts with "~": no shell reads
// prompts.toml, so "~" would be a directory named "~" beside the config
// file, never the home directory the author meant.
func checkTilde(key, path string) error {
	if path == "~" || strings.HasPrefix(path, "~/") || strings.HasPrefix(path, `~\`) {
		return fmt.Errorf("%s %q: \"~\" is not expanded here; write the absolute path, or \"${HOME}%s\"", key, path, strings.TrimPrefix(path, "~"))
	}
	return nil
}

// tomlTypeName names a decoded TOML value's type for a message.
func tomlTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

func (p *parser) buildGateway(r *rawGateway, g *Gateway) error {
	at := func(k string) tomlPath { return tomlPath{"gateway", k} }
	if r.URL == nil {
		return p.fail(at("url"), "[gateway].url is missing: set it to the gateway's API root, such as \"http://127.0.0.1:8081/v1\"")
	}
	if err := checkGatewayURL(*r.URL); err != nil {
		return p.fail(at("url"), err.Error())
	}
	g.URL = *r.URL
	if r.APIKey == nil {
		return p.fail(at("api_key"), "[gateway].api_key is missing: set it to the gateway's key, for example \"${PROMPTFORGE_GATEWAY_API_KEY}\"")
	}
	for _, d := range []struct {
		key, bounds string
		raw         *string
		dst         *time.Duration
	}{
		{"timeout", "each fetch of the model list", r.Timeout, &g.Timeout},
		{"request_timeout", "each chat request to the model server", r.RequestTimeout, &g.RequestTimeout},
	} {
		if d.raw == nil {
			continue
		}
		v, err := humantime.Parse(*d.raw)
		if err != nil {
			return p.fail(at(d.key), "[gateway]."+d.key+" is not a duration: "+err.Error())
		}
		if v <= 0 {
			return p.fail(at(d.key), "[gateway]."+d.key+" must be longer than 0s: it bounds "+d.bounds)
		}
		*d.dst = v
	}
	if r.ThinkingSwitch != nil {
		if !checkThinkingSwitch(*r.ThinkingSwitch) {
			return p.fail(at("thinking_switch"), fmt.Sprintf("[gateway].thinking_switch must be one of %s: %q", thinkingSwitches, *r.ThinkingSwitch))
		}
		g.ThinkingSwitch = *r.ThinkingSwitch
	}
	if r.Refresh != nil {
		d, err := parseRefresh(*r.Refresh)
		if err != nil {
			return p.fail(at("refresh"), err.Error())
		}
		g.Refresh = d
	}
	return nil
}

// minRefresh is the shortest [gateway].refresh period: anything shorter
// would poll the model server for no one's benefit (a binding that finds
// no model fetches at once anyway).
const minRefresh = time.Second

// parseRefresh reads [gateway].refresh: a duration of at least
// minRefresh, or "0" (or any zero duration) for no periodic fetch.
func parseRefresh(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	d, err := humantime.Parse(s)
	if err != nil {
		return 0, errors.New("[gateway].refresh is not a duration: " + err.Error() + `; use "0" to turn the periodic refresh off`)
	}
	if d != 0 && d < minRefresh {
		return 0, fmt.Errorf(`[gateway].refresh = %q is too short: use at least "1s", or "0" to turn the periodic refresh off`, s)
	}
	return d, nil
}

func (p *parser) patterns(list []string, key string) ([]string, error) {
	for _, pat := range list {
		if err := checkGlob(pat); err != nil {
			return nil, p.fail(tomlPath{"catalog", key}, fmt.Sprintf("[catalog] pattern %q: %v", pat, err))
		}
	}
	return slices.Clone(list), nil
}

// toolGlobs checks [catalog].tools: globs over prompt names, so
// path.Match syntax, and never a built-in tool's name (no prompt takes
// one, so such a glob could only be a mistake).
func (p *parser) toolGlobs(list []string) ([]string, error) {
	for _, pat := range list {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			return nil, p.fail(tomlPath{"catalog", "tools"}, fmt.Sprintf("[catalog] tools pattern %q is not a valid glob over prompt names; use letters, digits, _ and the wildcards *, ? and [...]", pat))
		}
		if names.IsReserved(pat) {
			return nil, p.fail(tomlPath{"catalog", "tools"}, fmt.Sprintf("[catalog] tools pattern %q is a built-in tool's name; no prompt can take it, so remove it", pat))
		}
	}
	return slices.Clone(list), nil
}

// sortedByLine orders table names by where they are written, so the first
// error reported is the first in the file.
func (p *parser) sortedByLine(table string, names []string) []string {
	slices.SortFunc(names, func(a, b string) int {
		la, lb := p.lines.line(tomlPath{table, a}), p.lines.line(tomlPath{table, b})
		if la != lb {
			return la - lb
		}
		return strings.Compare(a, b)
	})
	return names
}

func (p *parser) buildPrompts(raw map[string]rawBlock, dst map[string]PromptBlock) error {
	for _, name := range p.sortedByLine("prompts", slices.Collect(maps.Keys(raw))) {
		r := raw[name]
		at := tomlPath{"prompts", name}
		if err := checkPromptName(name); err != nil {
			return p.fail(at, err.Error())
		}
		b := PromptBlock{Enabled: deref(r.Enabled, true)}
		if r.File != nil {
			f := *r.File
			if strings.TrimSpace(f) == "" {
				return p.fail(append(at, "file"), fmt.Sprintf("[prompts] file %q: must name a prompt file relative to the prompts directory", f))
			}
			if err := CheckRelativePath(f); err != nil {
				return p.fail(append(at, "file"), fmt.Sprintf("[prompts] file %s: %v", f, err))
			}
			b.File = f
		}
		dst[name] = b
	}
	return nil
}

func (p *parser) buildModels(raw map[string]rawModel, dst ModelTable) error {
	for _, id := range p.sortedByLine("models", slices.Collect(maps.Keys(raw))) {
		r := raw[id]
		at := tomlPath{"models", id}
		name := modelKey(id)
		if strings.TrimSpace(id) == "" {
			return p.fail(at, name+" needs the model id the gateway serves as its key, as in [models.\"llama3\"]")
		}
		var o ModelSetting
		if r.Description != nil {
			if strings.TrimSpace(*r.Description) == "" {
				return p.fail(append(at, "description"), name+".description must not be empty: say what the model is good at, or leave the key out")
			}
			o.Description = *r.Description
		}
		if r.Context != nil {
			if c := *r.Context; c < 1 || c > math.MaxUint32 {
				return p.fail(append(at, "context"), fmt.Sprintf("%s.context must be a positive number of tokens no larger than %d: %d", name, uint32(math.MaxUint32), c))
			}
			o.Context = uint32(*r.Context)
		}
		if r.Thinking != nil {
			if !checkThinking(*r.Thinking) {
				return p.fail(append(at, "thinking"), fmt.Sprintf("%s.thinking must be one of never, always, switchable: %q", name, *r.Thinking))
			}
			o.Thinking = *r.Thinking
		}
		if r.ToolDialect != nil {
			switch d := *r.ToolDialect; d {
			case ToolDialectOpenAI, ToolDialectGemma3:
				o.ToolDialect = d
			default:
				return p.fail(append(at, "tool_dialect"), fmt.Sprintf("%s.tool_dialect must be %q or %q: %q", name, ToolDialectOpenAI, ToolDialectGemma3, *r.ToolDialect))
			}
		}
		if r.ThinkingSwitch != nil {
			if !checkThinkingSwitch(*r.ThinkingSwitch) {
				return p.fail(append(at, "thinking_switch"), fmt.Sprintf("%s.thinking_switch must be one of %s: %q", name, thinkingSwitches, *r.ThinkingSwitch))
			}
			o.ThinkingSwitch = *r.ThinkingSwitch
		}
		dst[id] = o
	}
	return nil
}
