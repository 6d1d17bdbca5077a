package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/promptforge-go/promptforge/internal/secret"
)

// minimal is the smallest configuration that loads.
const minimal = `
[server]

[gateway]
url = "http://127.0.0.1:8081/v1"
api_key = "gateway-key"
`

func vars(m map[string]string) LookupFunc {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// mustParse parses text that the test expects to load.
func mustParse(t *testing.T, text string, env map[string]string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(text), vars(env))
	if err != nil {
		t.Fatalf("Parse: %v\n--- config ---\n%s", err, text)
	}
	return cfg
}

// parseErr parses text that the test expects to fail and returns the
// *Error.
func parseErr(t *testing.T, text string, env map[string]string) *Error {
	t.Helper()
	cfg, err := Parse([]byte(text), vars(env))
	if err == nil {
		t.Fatalf("Parse succeeded (%+v), want an error\n--- config ---\n%s", cfg, text)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *config.Error", err, err)
	}
	return ce
}

// writeFile writes name under dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFullConfigReadsEveryField(t *testing.T) {
	cfg := mustParse(t, `
[server]
bind = "0.0.0.0:8080"
allowed_hosts = ["example.com", "example.com:8080"]
api_key = "server-token"
max_concurrent_runs = 2
admission_timeout = "5s"
reply_deadline = "2m"
retain_completed = "3h"
watch = false
watch_debounce = "250ms"

[paths]
prompts = 'C:\prompts\dir'
files = ["data", "/srv/out"]

[gateway]
url = " https://gw.example/v1 "
api_key = "gateway-key"
timeout = "3s"

[catalog]
include = ["**/*.md", "governance/[!_]*.md"]
exclude = ["drafts/**"]

[tools]
web_fetch = true
web_search = true

[prompts.dropped]
enabled = false

[prompts.staker]
file = "experiments/staker.md"

[models."llama3.1:8b"]
description = "small general model"
context = 131072
thinking = "switchable"
`, nil)

	s := cfg.Server
	if s.Bind != netip.MustParseAddrPort("0.0.0.0:8080") || s.Bind.Port() != 8080 {
		t.Errorf("bind = %v", s.Bind)
	}
	if !slices.Equal(s.AllowedHosts, []string{"example.com", "example.com:8080"}) {
		t.Errorf("allowed_hosts = %q", s.AllowedHosts)
	}
	if s.APIKey == nil || s.APIKey.Reveal() != "server-token" {
		t.Errorf("server api_key = %v", s.APIKey)
	}
	if s.MaxConcurrentRuns != 2 || s.AdmissionTimeout != 5*time.Second || s.ReplyDeadline != 2*time.Minute ||
		s.RetainCompleted != 3*time.Hour || s.Watch || s.WatchDebounce != 250*time.Millisecond {
		t.Errorf("server = %+v", s)
	}
	if !slices.Equal(cfg.Paths.Prompts, []string{`C:\prompts\dir`}) {
		t.Errorf("prompts path = %q, want it verbatim", cfg.Paths.Prompts)
	}
	if !slices.Equal(cfg.Paths.Files, []string{"data", "/srv/out"}) {
		t.Errorf("files = %q", cfg.Paths.Files)
	}
	if cfg.Gateway.URL != " https://gw.example/v1 " {
		t.Errorf("gateway url = %q, want the untrimmed original", cfg.Gateway.URL)
	}
	if cfg.Gateway.APIKey.Reveal() != "gateway-key" || cfg.Gateway.Timeout != 3*time.Second {
		t.Errorf("gateway = %+v", cfg.Gateway)
	}
	if !slices.Equal(cfg.Catalog.Include, []string{"**/*.md", "governance/[!_]*.md"}) ||
		!slices.Equal(cfg.Catalog.Exclude, []string{"drafts/**"}) {
		t.Errorf("catalog = %+v", cfg.Catalog)
	}
	if !cfg.Tools.WebFetch || !cfg.Tools.WebSearch {
		t.Errorf("tools = %+v", cfg.Tools)
	}
	wantBlocks := map[string]PromptBlock{
		"dropped": {Enabled: false},
		"staker":  {Enabled: true, File: "experiments/staker.md"},
	}
	if !reflect.DeepEqual(cfg.Prompts, wantBlocks) {
		t.Errorf("prompts = %+v, want %+v", cfg.Prompts, wantBlocks)
	}
	wantModels := ModelTable{
		"llama3.1:8b": {Description: "small general model", Context: 131072, Thinking: "switchable"},
	}
	if !reflect.DeepEqual(cfg.Models, wantModels) {
		t.Errorf("models = %+v, want %+v", cfg.Models, wantModels)
	}
}

func TestParseMinimalConfigFillsDefaults(t *testing.T) {
	cfg := mustParse(t, minimal, nil)
	want := &Config{
		Server: Server{
			Bind:              netip.MustParseAddrPort("127.0.0.1:9310"),
			MaxConcurrentRuns: 4,
			MaxSessions:       512,
			AdmissionTimeout:  30 * time.Second,
			ReplyDeadline:     45 * time.Second,
			RetainCompleted:   3600 * time.Second,
			Watch:             true,
			WatchDebounce:     500 * time.Millisecond,
		},
		Paths: Paths{Prompts: []string{"prompts"}},
		Gateway: Gateway{URL: "http://127.0.0.1:8081/v1", APIKey: mustSecret(t, "gateway-key"), Timeout: 10 * time.Second,
			RequestTimeout: 120 * time.Second, ThinkingSwitch: "chat_template_kwargs", Refresh: 5 * time.Minute},
		Tools:     Tools{Search: WebSearch{Provider: SearchGateway}},
		Retrieval: Retrieval{Timeout: 30 * time.Second},
		Runs:      Runs{Lease: 10 * time.Second},
		Limits:    Limits{MaxRunMemory: 64 << 20, MaxRequestSize: 32 << 20},
		Prompts:   map[string]PromptBlock{},
		Models:    ModelTable{},

		Observability: Observability{Traces: true, TraceSteps: 2000},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("minimal config =\n%+v\nwant\n%+v", cfg, want)
	}
	if cfg.Server.APIKey != nil {
		t.Error("server api_key is set, want absent")
	}
	if len(cfg.Catalog.Include) != 0 || len(cfg.Catalog.Exclude) != 0 || len(cfg.Prompts) != 0 {
		t.Errorf("no [catalog] should mean empty include/exclude and no blocks: %+v %+v", cfg.Catalog, cfg.Prompts)
	}
	if cfg.Paths.Files != nil {
		t.Errorf("files = %q, want nil (absent)", cfg.Paths.Files)
	}
}

func mustSecret(t *testing.T, v string) secret.Secret {
	t.Helper()
	s, err := secret.New(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPromptBlocks(t *testing.T) {
	cfg := mustParse(t, minimal+`
[prompts.dropped]
enabled = false

[prompts.staker]
file = "experiments/staker.md"

[prompts.local]
file = "./local.md"
`, nil)
	if b := cfg.Prompts["dropped"]; b.Enabled || b.File != "" {
		t.Errorf("dropped = %+v, want disabled with file absent", b)
	}
	if b := cfg.Prompts["staker"]; !b.Enabled || b.File != "experiments/staker.md" {
		t.Errorf("staker = %+v, want enabled by default with its file", b)
	}
	if b := cfg.Prompts["local"]; b.File != "./local.md" {
		t.Errorf("local = %+v", b)
	}
}

func TestServerAPIKey(t *testing.T) {
	withKey := func(v string) string {
		return strings.Replace(minimal, "[server]\n", "[server]\napi_key = "+v+"\n", 1)
	}
	t.Run("unset variable drops the key", func(t *testing.T) {
		cfg := mustParse(t, withKey(`"${PF_TEST_UNSET}"`), nil)
		if cfg.Server.APIKey != nil {
			t.Errorf("api_key = %v, want absent", cfg.Server.APIKey)
		}
	})
	t.Run("set variable is used untrimmed", func(t *testing.T) {
		cfg := mustParse(t, withKey(`"${TOKEN}"`), map[string]string{"TOKEN": " tok "})
		if cfg.Server.APIKey == nil || cfg.Server.APIKey.Reveal() != " tok " {
			t.Errorf("api_key = %v", cfg.Server.APIKey)
		}
	})
	t.Run("the value is expanded once", func(t *testing.T) {
		cfg := mustParse(t, withKey(`"${TOKEN}"`), map[string]string{"TOKEN": "a$${X}"})
		if cfg.Server.APIKey.Reveal() != "a$${X}" {
			t.Errorf("api_key = %q, want the variable's text unexpanded", cfg.Server.APIKey.Reveal())
		}
	})
	t.Run("unclosed interpolation still fails", func(t *testing.T) {
		e := parseErr(t, withKey(`"${OPEN"`), nil)
		if e.Kind != KindInterpolation {
			t.Errorf("kind = %v, want interpolation", e.Kind)
		}
	})
	for _, blank := range []string{`""`, `" "`, `"\t\n"`} {
		t.Run("blank "+blank, func(t *testing.T) {
			e := parseErr(t, withKey(blank), nil)
			if e.Kind != KindEmptyToken {
				t.Errorf("kind = %v, want empty token", e.Kind)
			}
			if msg := e.Error(); msg != "[server].api_key must not be empty" {
				t.Errorf("message = %q", msg)
			}
		})
	}
}

func TestGatewayAPIKeyUnsetVariableFails(t *testing.T) {
	text := strings.Replace(minimal, `"gateway-key"`, `"${PF_TEST_GATEWAY_UNSET}"`, 1)
	e := parseErr(t, text, nil)
	if e.Kind != KindUnresolvedVar || e.Var != "PF_TEST_GATEWAY_UNSET" {
		t.Fatalf("got %v (kind %v, var %q), want unresolved PF_TEST_GATEWAY_UNSET", e, e.Kind, e.Var)
	}
	if !strings.Contains(e.Error(), "PF_TEST_GATEWAY_UNSET") || !strings.Contains(e.Error(), "[gateway].api_key") {
		t.Errorf("message %q should name the variable and the setting", e.Error())
	}
}

func TestUnknownKeysAreRefusedByName(t *testing.T) {
	cases := []struct {
		name, extra, key string
		line             int
	}{
		{"misspelled catalog key", "[catalog]\ninculde = [\"*.md\"]\n", "inculde", 8},
		{"retired default_expose", "[catalog]\ndefault_expose = true\n", "default_expose", 8},
		{"retired block expose", "[prompts.x]\nexpose = true\n", "expose", 8},
		{"unknown server key", "[paths]\nprompt = \"p\"\n", "prompt", 8},
		{"unknown top-level table", "[extras]\nx = 1\n", "extras", 7},
		{"unknown tools key", "[tools]\nshell = true\n", "shell", 8},
		{"unknown model key", "[models.m]\nsize = 3\n", "size", 8},
		{"unknown gateway key", "[gateway.x]\n", "x", 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := parseErr(t, minimal+tc.extra, nil)
			if e.Kind != KindParse {
				t.Errorf("kind = %v, want parse", e.Kind)
			}
			if !strings.Contains(e.Error(), tc.key) {
				t.Errorf("message %q does not name %q", e.Error(), tc.key)
			}
			if e.Line != tc.line {
				t.Errorf("line = %d, want %d (message %q)", e.Line, tc.line, e.Error())
			}
		})
	}
}

func TestUnknownKeyMessageSaysWhatTheTableTakes(t *testing.T) {
	e := parseErr(t, minimal+"[catalog]\ninculde = []\nexlude = []\n", nil)
	want := "parse config: line 8: unknown key [catalog].inculde: [catalog] takes include, exclude, tools; also unknown: [catalog].exlude (line 9)"
	if e.Error() != want {
		t.Errorf("message =\n%q\nwant\n%q", e.Error(), want)
	}
}

func TestInterpolation(t *testing.T) {
	env := map[string]string{"TOKEN": "secret-value", "HOST": "h.example", "DIR": "nested"}
	cases := []struct{ in, want string }{
		{"${TOKEN}", "secret-value"},
		{"a$$b", "a$b"},
		{"100$", "100$"},
		{"plain text", "plain text"},
		{"$x and $", "$x and $"},
		{"pre-${HOST}-post", "pre-h.example-post"},
		{"$${TOKEN}", "${TOKEN}"},
		{"${HOST}${DIR}", "h.examplenested"},
	}
	for _, tc := range cases {
		got, err := interpolate(tc.in, vars(env))
		if err != nil || got != tc.want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := interpolate("${NOPE}", vars(env)); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("unset variable: err = %v, want one naming NOPE", err)
	}
	if _, err := interpolate("${OPEN", vars(env)); !errors.Is(err, errUnclosed) {
		t.Errorf("unclosed: err = %v", err)
	}
	// Substituted text is not scanned again.
	got, err := interpolate("${X}", vars(map[string]string{"X": "${TOKEN}"}))
	if err != nil || got != "${TOKEN}" {
		t.Errorf("re-scan: got %q, %v", got, err)
	}
}

func TestInterpolationErrorsThroughParse(t *testing.T) {
	t.Run("unset", func(t *testing.T) {
		e := parseErr(t, minimal+"[paths]\nprompts = \"${NOPE}\"\n", nil)
		if e.Kind != KindUnresolvedVar || e.Var != "NOPE" || e.Path != "" || e.Line != 8 {
			t.Errorf("got kind %v var %q path %q line %d: %v", e.Kind, e.Var, e.Path, e.Line, e)
		}
		if !strings.HasPrefix(e.Error(), "unresolved environment variable NOPE") {
			t.Errorf("message = %q", e.Error())
		}
	})
	t.Run("unclosed", func(t *testing.T) {
		e := parseErr(t, minimal+"[paths]\nprompts = \"${OPEN\"\n", nil)
		if e.Kind != KindInterpolation || !strings.HasPrefix(e.Error(), "interpolation: unclosed ${...} interpolation") {
			t.Errorf("got kind %v: %q", e.Kind, e.Error())
		}
	})
	t.Run("keys are not interpolated", func(t *testing.T) {
		cfg := mustParse(t, minimal+"[models.\"${ID}\"]\ncontext = 8\n", nil)
		if _, ok := cfg.Models["${ID}"]; !ok {
			t.Errorf("models = %v, want the key verbatim", cfg.Models)
		}
	})
	t.Run("literal strings, arrays and nested tables", func(t *testing.T) {
		cfg := mustParse(t, `
[server]
allowed_hosts = ["${HOST}", "other"]
[paths]
prompts = '${DIR}'
[gateway]
url = "http://${HOST}/v1"
api_key = "k"
[prompts.example]
file = "${DIR}/example.md"
`, map[string]string{"HOST": "h.example", "DIR": "sub"})
		if !slices.Equal(cfg.Server.AllowedHosts, []string{"h.example", "other"}) {
			t.Errorf("allowed_hosts = %q", cfg.Server.AllowedHosts)
		}
		if !slices.Equal(cfg.Paths.Prompts, []string{"sub"}) || cfg.Gateway.URL != "http://h.example/v1" || cfg.Prompts["example"].File != "sub/example.md" {
			t.Errorf("got prompts %q url %q file %q", cfg.Paths.Prompts, cfg.Gateway.URL, cfg.Prompts["example"].File)
		}
	})
	t.Run("a substituted value is validated", func(t *testing.T) {
		e := parseErr(t, minimal+"[prompts.x]\nfile = \"${F}\"\n", map[string]string{"F": "../escape.md"})
		if e.Kind != KindParse || !strings.Contains(e.Error(), "..") {
			t.Errorf("got %v", e)
		}
	})
	t.Run("a variable that is not UTF-8", func(t *testing.T) {
		e := parseErr(t, minimal+"[paths]\nprompts = \"${BAD}\"\n", map[string]string{"BAD": "\xff"})
		if e.Kind != KindInterpolation {
			t.Errorf("got kind %v: %v", e.Kind, e)
		}
	})
}

func TestInterpolationReadsTheRealEnvironment(t *testing.T) {
	t.Setenv("PF_TEST_REAL_DIR", "/from/the/environment")
	text := strings.Replace(minimal, "[gateway]", "[paths]\nprompts = '${PF_TEST_REAL_DIR}'\n[gateway]", 1)
	path := writeFile(t, t.TempDir(), "prompts.toml", text)
	cfg, err := Loader{}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Paths.Prompts, []string{"/from/the/environment"}) {
		t.Errorf("prompts = %q", cfg.Paths.Prompts)
	}
}

func TestValidationErrors(t *testing.T) {
	cases := []struct {
		name, text, contains string
		line                 int
	}{
		{"max_concurrent_runs zero", strings.Replace(minimal, "[server]", "[server]\nmax_concurrent_runs = 0", 1), "max_concurrent_runs", 3},
		{"max_concurrent_runs negative", strings.Replace(minimal, "[server]", "[server]\nmax_concurrent_runs = -1", 1), "at least 1", 3},
		{"max_sessions zero", strings.Replace(minimal, "[server]", "[server]\nmax_sessions = 0", 1), "[server].max_sessions must be at least 1", 3},
		{"max_sessions a string", strings.Replace(minimal, "[server]", "[server]\nmax_sessions = \"many\"", 1), "max_sessions", 3},
		{"allowed_origins a string", strings.Replace(minimal, "[server]", "[server]\nallowed_origins = \"https://a\"", 1), "allowed_origins", 3},
		{"bind not an address", strings.Replace(minimal, "[server]", "[server]\nbind = \"not-an-address\"", 1), "[server].bind", 3},
		{"bind host name", strings.Replace(minimal, "[server]", "[server]\nbind = \"localhost:9310\"", 1), "[server].bind", 3},
		{"bind without port", strings.Replace(minimal, "[server]", "[server]\nbind = \"127.0.0.1\"", 1), "[server].bind", 3},
		{"bad duration", strings.Replace(minimal, "[server]", "[server]\nadmission_timeout = \"not-a-duration\"", 1), "admission_timeout", 3},
		{"bare integer duration", strings.Replace(minimal, "[server]", "[server]\nreply_deadline = 30", 1), "duration string", 3},
		{"wrong type", strings.Replace(minimal, "[server]", "[server]\nwatch = \"yes\"", 1), "[server].watch must be true or false", 3},
		{"missing gateway", "[server]\n", "[gateway]", 0},
		{"missing server", "[gateway]\nurl = \"http://h/v1\"\napi_key = \"k\"\n", "[server]", 0},
		{"missing gateway url", "[server]\n[gateway]\napi_key = \"k\"\n", "[gateway].url", 2},
		{"missing gateway api_key", "[server]\n[gateway]\nurl = \"http://h/v1\"\n", "[gateway].api_key", 2},
		{"whitespace gateway api_key", strings.Replace(minimal, `"gateway-key"`, `"  "`, 1), "[gateway].api_key", 6},
		{"empty gateway url", strings.Replace(minimal, `"http://127.0.0.1:8081/v1"`, `"  "`, 1), "[gateway].url", 5},
		{"schemeless gateway url", strings.Replace(minimal, `"http://127.0.0.1:8081/v1"`, `"127.0.0.1:8081/v1"`, 1), "http", 5},
		{"ftp gateway url", strings.Replace(minimal, `"http://127.0.0.1:8081/v1"`, `"ftp://h/v1"`, 1), "must be an http or https URL", 5},
		{"gateway url without host", strings.Replace(minimal, `"http://127.0.0.1:8081/v1"`, `"http:///v1"`, 1), "must have a host", 5},
		{"gateway timeout zero", strings.Replace(minimal, "[gateway]", "[gateway]\ntimeout = \"0s\"", 1), "[gateway].timeout", 5},
		{"gateway timeout bad", strings.Replace(minimal, "[gateway]", "[gateway]\ntimeout = \"soon\"", 1), "[gateway].timeout", 5},
		{"gateway refresh bad", strings.Replace(minimal, "[gateway]", "[gateway]\nrefresh = \"often\"", 1), `use "0" to turn the periodic refresh off`, 5},
		{"gateway refresh too short", strings.Replace(minimal, "[gateway]", "[gateway]\nrefresh = \"500ms\"", 1), `[gateway].refresh = "500ms" is too short`, 5},
		{"upper-case block name", minimal + "[prompts.Research-Person]\n", "^[a-z][a-z0-9_]{0,47}$", 7},
		{"block name too long", minimal + "[prompts." + strings.Repeat("a", 49) + "]\n", "is not ^[a-z]", 7},
		{"reserved block name", minimal + "[prompts.run_prompt]\n", "[prompts.run_prompt] key is reserved", 7},
		{"climbing block file", minimal + "[prompts.staker]\nfile = \"../staker.md\"\n", "..", 8},
		{"absolute block file", minimal + "[prompts.staker]\nfile = \"/etc/passwd\"\n", "must be relative", 8},
		{"empty block file", minimal + "[prompts.staker]\nfile = \"\"\n", "[prompts] file", 8},
		{"unclosed class", minimal + "[catalog]\ninclude = [\"a[b\"]\n", `[catalog] pattern "a[b"`, 8},
		{"alternation", minimal + "[catalog]\nexclude = [\"{a,b}.md\"]\n", "alternation", 8},
		{"star-star in a name", minimal + "[catalog]\ninclude = [\"a**\"]\n", "whole path component", 8},
		{"climbing pattern", minimal + "[catalog]\ninclude = [\"a/../../x\"]\n", "..", 8},
		{"empty files entry", minimal + "[paths]\nfiles = [\"\"]\n", "[paths].files", 8},
		{"model context zero", minimal + "[models.m]\ncontext = 0\n", `[models.m].context`, 8},
		{"model context too big", minimal + "[models.m]\ncontext = 4294967296\n", "positive number", 8},
		{"model thinking", minimal + "[models.m]\nthinking = \"sometimes\"\n", "never, always, switchable", 8},
		{"model tool_dialect", minimal + "[models.m]\ntool_dialect = \"anthropic\"\n", "must be \"openai\" or \"gemma3_tool_code\"", 8},
		{"gateway request_timeout zero", strings.Replace(minimal, "[gateway]", "[gateway]\nrequest_timeout = \"0s\"", 1), "[gateway].request_timeout must be longer than 0s", 5},
		{"gateway request_timeout bad", strings.Replace(minimal, "[gateway]", "[gateway]\nrequest_timeout = \"soon\"", 1), "[gateway].request_timeout is not a duration", 5},
		{"gateway thinking_switch", strings.Replace(minimal, "[gateway]", "[gateway]\nthinking_switch = \"think\"", 1), `[gateway].thinking_switch must be one of "chat_template_kwargs" (vLLM, llama.cpp), "reasoning_effort" (Ollama, OpenAI), "none": "think"`, 5},
		{"model thinking_switch", minimal + "[models.m]\nthinking_switch = \"enable_thinking\"\n", `[models.m].thinking_switch must be one of "chat_template_kwargs"`, 8},
		{"model blank description", minimal + "[models.m]\ndescription = \" \"\n", "description must not be empty", 8},
		{"quoted model id", minimal + "[models.\"a.b\"]\n\ncontext = 0\n", `[models."a.b"].context`, 9},
		{"model empty id", minimal + "[models.\"\"]\ncontext = 1\n", `[models.""]`, 7},
		{"syntax error", minimal + "[broken\n", "invalid TOML", 7},
		{"duplicate key", minimal + "[tools]\nweb_fetch = true\nweb_fetch = false\n", "web_fetch", 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := parseErr(t, tc.text, nil)
			if e.Kind != KindParse {
				t.Errorf("kind = %v, want parse (%v)", e.Kind, e)
			}
			msg := e.Error()
			if !strings.HasPrefix(msg, "parse config: ") || !strings.Contains(msg, tc.contains) {
				t.Errorf("message %q should start with %q and contain %q", msg, "parse config: ", tc.contains)
			}
			if e.Line != tc.line {
				t.Errorf("line = %d, want %d (%q)", e.Line, tc.line, msg)
			}
		})
	}
}

func TestParseErrorCarriesTheFileAndLine(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "prompts.toml", strings.Replace(minimal, "[server]", "[server]\nbind = \"localhost:9310\"", 1))
	_, err := Loader{}.Load(path)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v", err)
	}
	if e.Path != path || e.Line != 3 || !strings.HasPrefix(e.Error(), "parse config: "+path+":3: [server].bind") {
		t.Errorf("got path %q line %d: %q", e.Path, e.Line, e.Error())
	}
}

func TestSyntaxErrorKeepsTheParserErrorAsCause(t *testing.T) {
	e := parseErr(t, "[server\n", nil)
	var de *toml.DecodeError
	if e.Kind != KindParse || !errors.As(e, &de) {
		t.Errorf("kind %v, cause %T: want parse with a *toml.DecodeError cause", e.Kind, e.Err)
	}
	if e.Line != 1 {
		t.Errorf("line = %d", e.Line)
	}
}

func TestValidationErrorsHaveNoCause(t *testing.T) {
	e := parseErr(t, strings.Replace(minimal, "[server]", "[server]\nmax_concurrent_runs = 0", 1), nil)
	if e.Err != nil || errors.Unwrap(e) != nil {
		t.Errorf("cause = %v, want none", e.Err)
	}
}

func TestGlobRules(t *testing.T) {
	good := []string{"**/*.md", "governance/**/*.md", "./local.md", "a/**", "**", "[abc].md", "[!_]*.md",
		"?x.md", "[a-z]*/*.md", "plain.md", "[{]literal-brace[}].md"}
	for _, p := range good {
		if err := checkGlob(p); err != nil {
			t.Errorf("checkGlob(%q) = %v, want ok", p, err)
		}
	}
	bad := map[string]string{
		"a[b":         "not closed",
		"a**":         "whole path component",
		"**a":         "whole path component",
		"a/**b":       "whole path component",
		"***/x":       "three or more",
		"{a,b}.md":    "alternation",
		"x}.md":       "braces",
		`a\*.md`:      "backslashes",
		"[^a].md":     "[!...]",
		"[].md":       "empty",
		"/abs/*.md":   "relative",
		"../x/*.md":   "..",
		"a/../../x":   "..",
		"":            "empty",
		"drafts/../*": "..",
	}
	for p, want := range bad {
		err := checkGlob(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkGlob(%q) = %v, want an error containing %q", p, err, want)
		}
	}
}

func TestCheckRelativePath(t *testing.T) {
	cases := []struct {
		path, want string // want "" means allowed
	}{
		{"/abs/x.md", "relative"},
		{"../x", ".."},
		{"a/../../x", ".."},
		{"a/..", ".."},
		{"governance/**/*.md", ""},
		{"./local.md", ""},
		{"a/./b.md", ""},
		{"..x/y", ""},
		{`C:\x`, ""}, // on Unix a plain relative name
	}
	for _, tc := range cases {
		err := CheckRelativePath(tc.path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckRelativePath(%q) = %v, want ok", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckRelativePath(%q) = %v, want an error containing %q", tc.path, err, tc.want)
		}
	}
	if err := CheckRelativePath("/x"); err.Error() != "/x must be relative to the prompts directory" {
		t.Errorf("message = %q", err)
	}
	if err := CheckRelativePath("../x"); err.Error() != "../x must not climb above the prompts directory with `..`" {
		t.Errorf("message = %q", err)
	}
}

func TestBindAcceptsIPLiterals(t *testing.T) {
	for _, b := range []string{"127.0.0.1:9310", "[::1]:9310", "0.0.0.0:0", "[::]:80"} {
		cfg := mustParse(t, strings.Replace(minimal, "[server]", "[server]\nbind = \""+b+"\"", 1), nil)
		if cfg.Server.Bind != netip.MustParseAddrPort(b) {
			t.Errorf("bind %q = %v", b, cfg.Server.Bind)
		}
	}
}

func TestGatewayURLsAccepted(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8081/v1", "https://gw.example/v1/", "HTTP://h/v1", "http://[::1]:8081/v1"} {
		cfg := mustParse(t, strings.Replace(minimal, "http://127.0.0.1:8081/v1", u, 1), nil)
		if cfg.Gateway.URL != u {
			t.Errorf("url = %q, want %q", cfg.Gateway.URL, u)
		}
	}
}

func TestGatewayRefresh(t *testing.T) {
	for text, want := range map[string]time.Duration{"": DefaultGatewayRefresh, `"0"`: 0, `" 0 "`: 0, `"0s"`: 0, `"1s"`: time.Second, `"1h 30m"`: 90 * time.Minute} {
		src := minimal
		if text != "" {
			src = strings.Replace(minimal, "[gateway]", "[gateway]\nrefresh = "+text, 1)
		}
		if got := mustParse(t, src, nil).Gateway.Refresh; got != want {
			t.Errorf("refresh = %s: got %v, want %v", text, got, want)
		}
	}
}

func TestDurationsAcceptZero(t *testing.T) {
	cfg := mustParse(t, strings.Replace(minimal, "[server]",
		"[server]\nadmission_timeout = \"0s\"\nreply_deadline = \"0s\"\nretain_completed = \"0s\"\nwatch_debounce = \"1h 30m\"", 1), nil)
	s := cfg.Server
	if s.AdmissionTimeout != 0 || s.ReplyDeadline != 0 || s.RetainCompleted != 0 || s.WatchDebounce != 90*time.Minute {
		t.Errorf("server = %+v", s)
	}
}

func TestModelsPartialTables(t *testing.T) {
	cfg := mustParse(t, minimal+`
[models."only-desc"]
description = "d"
[models.ctx]
context = 4096
[models."thinks.always"]
thinking = "always"
[models.empty]
`, nil)
	want := ModelTable{
		"only-desc":     {Description: "d"},
		"ctx":           {Context: 4096},
		"thinks.always": {Thinking: "always"},
		"empty":         {},
	}
	if !reflect.DeepEqual(cfg.Models, want) {
		t.Errorf("models = %+v, want %+v", cfg.Models, want)
	}
}

func TestFileRoots(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		files []string
		want  []string
	}{
		{"absent means the working directory", nil, []string{wd}},
		{"empty means none", []string{}, []string{}},
		{"relative and absolute, cleaned, deduplicated", []string{"data/../data/", "/srv//out", "data"},
			[]string{filepath.Join(wd, "data"), "/srv/out"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{Paths: Paths{Files: tc.files}}
			got, err := cfg.FileRoots()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("FileRoots = %q, want %q", got, tc.want)
			}
		})
	}
}

// Relative paths in prompts.toml are read against its directory, whatever
// the working directory (an IDE starts a stdio server in the project).
func TestPathsResolveAgainstTheConfigDirectory(t *testing.T) {
	base := t.TempDir()
	confDir := filepath.Join(base, "conf")
	if err := os.Mkdir(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, confDir, "prompts.toml", minimal+`[paths]
prompts = ["prompts", "/team/shared", "../mine/", "prompts/."]
files = ["data", "/srv/out", "."]
`)
	elsewhere := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	for _, given := range []string{path, filepath.Join("..", "conf", "prompts.toml")} {
		cfg, err := Loader{LookupEnv: vars(nil)}.Load(given)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Dir != confDir {
			t.Errorf("%s: Dir = %q, want %q", given, cfg.Dir, confDir)
		}
		wantPrompts := []string{filepath.Join(confDir, "prompts"), "/team/shared", filepath.Join(base, "mine")}
		if got := cfg.PromptDirs(); !slices.Equal(got, wantPrompts) {
			t.Errorf("%s: PromptDirs = %q, want %q", given, got, wantPrompts)
		}
		roots, err := cfg.FileRoots()
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{filepath.Join(confDir, "data"), "/srv/out", confDir}; !slices.Equal(roots, want) {
			t.Errorf("%s: FileRoots = %q, want %q", given, roots, want)
		}
	}
	// Without [paths] the prompts directory is "prompts" beside the file,
	// and the file root stays the working directory: that is where a
	// caller's relative input_file is read from.
	bare := writeFile(t, confDir, "bare.toml", minimal)
	cfg, err := Loader{LookupEnv: vars(nil)}.Load(bare)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.PromptDirs(); !slices.Equal(got, []string{filepath.Join(confDir, "prompts")}) {
		t.Errorf("default PromptDirs = %q", got)
	}
	if roots, err := cfg.FileRoots(); err != nil || !slices.Equal(roots, []string{elsewhere}) {
		t.Errorf("default FileRoots = %q, %v; want the working directory %s", roots, err, elsewhere)
	}
}

func TestPromptsTakesAStringOrAList(t *testing.T) {
	if cfg := mustParse(t, minimal+"[paths]\nprompts = \"one\"\n", nil); !slices.Equal(cfg.Paths.Prompts, []string{"one"}) {
		t.Errorf("string: %q", cfg.Paths.Prompts)
	}
	cfg := mustParse(t, minimal+"[paths]\nprompts = [\"/team/shared-prompts\", \"${MINE}\"]\n", map[string]string{"MINE": "prompts"})
	if !slices.Equal(cfg.Paths.Prompts, []string{"/team/shared-prompts", "prompts"}) {
		t.Errorf("list: %q", cfg.Paths.Prompts)
	}
	refused := []struct{ value, want string }{
		{"42", "[paths].prompts must be a string or an array of strings, such as \"prompts\" or [\"/team/prompts\", \"prompts\"]: it is an integer"},
		{"{ dir = \"x\" }", "must be a string or an array of strings, such as \"prompts\" or [\"/team/prompts\", \"prompts\"]: it is a table"},
		{"[\"a\", 1]", "[paths].prompts must be a string or an array of strings: entry 2 is an integer"},
		{"[]", "[paths].prompts must name at least one directory"},
		{"[\"a\", \" \"]", "[paths].prompts must not name an empty directory"},
		{"\"\"", "[paths].prompts must not name an empty directory"},
		{"\"~/prompts\"", `[paths].prompts "~/prompts": "~" is not expanded here; write the absolute path, or "${HOME}/prompts"`},
	}
	for _, tc := range refused {
		e := parseErr(t, minimal+"[paths]\nprompts = "+tc.value+"\n", nil)
		if e.Kind != KindParse || e.Key != "[paths].prompts" || e.Line == 0 || !strings.Contains(e.Error(), tc.want) {
			t.Errorf("prompts = %s: %+v (%q), want a parse error on its line containing %q", tc.value, e, e.Error(), tc.want)
		}
	}
	e := parseErr(t, minimal+"[paths]\nfiles = [\"~\"]\n", nil)
	if !strings.Contains(e.Error(), `[paths].files "~": "~" is not expanded here`) {
		t.Errorf("files = [\"~\"]: %q", e.Error())
	}
}

func TestFilesEmptyListIsKeptDistinctFromAbsent(t *testing.T) {
	cfg := mustParse(t, minimal+"[paths]\nfiles = []\n", nil)
	if cfg.Paths.Files == nil || len(cfg.Paths.Files) != 0 {
		t.Errorf("files = %#v, want an empty non-nil list", cfg.Paths.Files)
	}
}

func TestDiffUnreloadable(t *testing.T) {
	base := mustParse(t, minimal, nil)
	edit := func(from, to string) *Config {
		return mustParse(t, strings.Replace(minimal, from, to, 1), nil)
	}
	cases := []struct {
		name string
		next *Config
		want []string
	}{
		{"identical", mustParse(t, minimal, nil), nil},
		{"bind and debounce, in order", edit("[server]", "[server]\nwatch_debounce = \"1s\"\nbind = \"127.0.0.1:1\""),
			[]string{"[server].bind", "[server].watch_debounce"}},
		{"gateway url and prompts path", mustParse(t, strings.Replace(strings.Replace(minimal, "http://127.0.0.1:8081/v1", "http://other/v1", 1),
			"[gateway]", "[paths]\nprompts = \"elsewhere\"\n[gateway]", 1), nil),
			[]string{"[paths].prompts", "[gateway].url"}},
		{"every server setting", edit("[server]", `[server]
bind = "127.0.0.1:1"
api_key = "t"
max_concurrent_runs = 9
admission_timeout = "1s"
reply_deadline = "1s"
retain_completed = "1s"
watch = false
watch_debounce = "1s"
allowed_hosts = ["h"]
allowed_origins = ["https://app.example"]
max_sessions = 3`), []string{"[server].bind", "[server].api_key", "[server].max_concurrent_runs",
			"[server].admission_timeout", "[server].reply_deadline", "[server].retain_completed", "[server].watch",
			"[server].watch_debounce", "[server].allowed_hosts", "[server].allowed_origins", "[server].max_sessions"}},
		{"our additions", edit("api_key = \"gateway-key\"", `api_key = "other-key"
timeout = "1s"
request_timeout = "1s"
thinking_switch = "none"
refresh = "1s"
[paths]
files = ["x"]
[tools]
web_fetch = true
web_search = true
[models.b]
context = 1
[models.a]
context = 2`), []string{"[gateway].api_key", "[gateway].timeout", "[gateway].request_timeout", "[gateway].thinking_switch", "[gateway].refresh", "[paths].files", "[tools].web_fetch",
			"[tools].web_search", "[models.a]", "[models.b]"}},
		{"catalog and prompts reload", edit("[server]", "[catalog]\ninclude = [\"*.md\"]\n[prompts.x]\nenabled = false\n[server]"), nil},
		{"files absent vs empty", edit("[server]", "[paths]\nfiles = []\n[server]"), []string{"[paths].files"}},
		{"the default prompts written out", edit("[server]", "[paths]\nprompts = [\"prompts\"]\n[server]"), nil},
		{"a second prompts directory", edit("[server]", "[paths]\nprompts = [\"prompts\", \"mine\"]\n[server]"), []string{"[paths].prompts"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := base.DiffUnreloadable(tc.next); !slices.Equal(got, tc.want) {
				t.Errorf("DiffUnreloadable = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("a changed model override", func(t *testing.T) {
		a := mustParse(t, minimal+"[models.m]\ncontext = 1\n", nil)
		b := mustParse(t, minimal+"[models.m]\ncontext = 2\n", nil)
		if got := a.DiffUnreloadable(b); !slices.Equal(got, []string{"[models.m]"}) {
			t.Errorf("got %q", got)
		}
	})
}

func TestLoadFromFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "prompts.toml", minimal)
	cfg, err := Loader{LookupEnv: vars(nil)}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != path || cfg.Gateway.APIKey.Reveal() != "gateway-key" {
		t.Errorf("cfg = %+v", cfg)
	}
}

func TestParseAndLoadAgree(t *testing.T) {
	text := minimal + "[catalog]\ninclude = [\"**/*.md\"]\n[prompts.a]\nfile = \"${F}\"\n"
	env := map[string]string{"F": "a.md"}
	parsed := mustParse(t, text, env)
	path := writeFile(t, t.TempDir(), "prompts.toml", text)
	loaded, err := Loader{LookupEnv: vars(env)}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	loaded.Path, loaded.Dir = "", ""
	if !reflect.DeepEqual(parsed, loaded) {
		t.Errorf("Parse =\n%+v\nLoad =\n%+v", parsed, loaded)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope", "prompts.toml")
	_, err := Loader{}.Load(path)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindRead {
		t.Fatalf("err = %v, want a read error", err)
	}
	if e.Path != path {
		t.Errorf("path = %q, want %q verbatim", e.Path, path)
	}
	if !errors.Is(err, fs.ErrNotExist) || e.Err == nil {
		t.Errorf("cause = %v, want not-exist", e.Err)
	}
	if !strings.HasPrefix(err.Error(), "read config "+path+": ") {
		t.Errorf("message = %q", err.Error())
	}
}

func TestLoadReadErrors(t *testing.T) {
	dir := t.TempDir()
	t.Run("a directory", func(t *testing.T) {
		_, err := Loader{}.Load(dir)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindRead || e.Err == nil {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("not UTF-8", func(t *testing.T) {
		path := writeFile(t, dir, "bad.toml", minimal+"# \xff\n")
		_, err := Loader{}.Load(path)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindRead || !errors.Is(err, errNotUTF8File) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestLoadSizeCap(t *testing.T) {
	dir := t.TempDir()
	pad := func(n int) string {
		body := minimal + "#"
		return body + strings.Repeat("x", n-len(body)-1) + "\n"
	}
	exact := writeFile(t, dir, "exact.toml", pad(maxConfigBytes))
	if _, err := (Loader{}).Load(exact); err != nil {
		t.Errorf("a file of exactly the cap: %v", err)
	}
	over := writeFile(t, dir, "over.toml", pad(maxConfigBytes+1))
	_, err := Loader{}.Load(over)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindParse {
		t.Fatalf("err = %v, want a parse error", err)
	}
	want := "parse config: config file " + over + " exceeds the 4194304-byte limit"
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
}

func TestEnvFile(t *testing.T) {
	withVar := strings.Replace(minimal, `"gateway-key"`, `"${PF_TEST_ENV_KEY}"`, 1)

	t.Run("supplies a variable the process lacks", func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "prompts.toml", withVar)
		writeFile(t, dir, "prompts.env", "PF_TEST_ENV_KEY=from-file\n")
		cfg, err := Loader{LookupEnv: vars(nil)}.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Gateway.APIKey.Reveal() != "from-file" {
			t.Errorf("api_key = %q", cfg.Gateway.APIKey.Reveal())
		}
	})
	t.Run("the process environment wins", func(t *testing.T) {
		t.Setenv("PF_TEST_ENV_KEY", "from-process")
		dir := t.TempDir()
		path := writeFile(t, dir, "prompts.toml", withVar)
		writeFile(t, dir, "prompts.env", "PF_TEST_ENV_KEY=from-file\n")
		cfg, err := Loader{}.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Gateway.APIKey.Reveal() != "from-process" {
			t.Errorf("api_key = %q", cfg.Gateway.APIKey.Reveal())
		}
	})
	t.Run("a missing env file is skipped silently", func(t *testing.T) {
		var logs bytes.Buffer
		path := writeFile(t, t.TempDir(), "prompts.toml", minimal)
		if _, err := (Loader{LookupEnv: vars(nil), Logger: slog.New(slog.NewJSONHandler(&logs, nil))}).Load(path); err != nil {
			t.Fatal(err)
		}
		if logs.Len() != 0 {
			t.Errorf("logged %s", logs.String())
		}
	})
	t.Run("a malformed env file is ignored whole with a warning", func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "prompts.toml", strings.Replace(minimal, "[server]", "[server]\napi_key = \"${PF_TEST_SERVER_KEY}\"", 1))
		envPath := writeFile(t, dir, "prompts.env", "PF_TEST_SERVER_KEY=first-line-is-fine\nthis line has no equals sign hunter2\n")
		var logs bytes.Buffer
		cfg, err := Loader{LookupEnv: vars(nil), Logger: slog.New(slog.NewJSONHandler(&logs, nil))}.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.APIKey != nil {
			t.Errorf("api_key = %q, want absent: the whole file must be ignored", cfg.Server.APIKey.Reveal())
		}
		rec := decodeLog(t, logs.Bytes())
		want := map[string]any{"level": "WARN", "msg": "ignoring env file that did not parse", "path": envPath, "line_index": float64(2)}
		if !reflect.DeepEqual(rec, want) {
			t.Errorf("log record = %v, want %v", rec, want)
		}
		if strings.Contains(logs.String(), "hunter2") || strings.Contains(logs.String(), "first-line") {
			t.Errorf("the warning leaked file content: %s", logs.String())
		}
	})
	t.Run("an unreadable env file is ignored with a warning", func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "prompts.toml", minimal)
		if err := os.Mkdir(filepath.Join(dir, "prompts.env"), 0o700); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		if _, err := (Loader{LookupEnv: vars(nil), Logger: slog.New(slog.NewJSONHandler(&logs, nil))}).Load(path); err != nil {
			t.Fatal(err)
		}
		rec := decodeLog(t, logs.Bytes())
		if rec["msg"] != "ignoring env file that could not be read" || rec["path"] != filepath.Join(dir, "prompts.env") || rec["error"] == nil {
			t.Errorf("log record = %v", rec)
		}
	})
	t.Run("values never reach the process environment", func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "prompts.toml", withVar)
		writeFile(t, dir, "prompts.env", "PF_TEST_ENV_KEY=from-file\nPF_TEST_ENV_OTHER=x\n")
		if _, err := (Loader{}).Load(path); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"PF_TEST_ENV_KEY", "PF_TEST_ENV_OTHER"} {
			if v, ok := os.LookupEnv(name); ok {
				t.Errorf("%s = %q leaked into the process environment", name, v)
			}
		}
	})
	t.Run("env file substitution sees the process environment", func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "my.cfg.toml", withVar)
		writeFile(t, dir, "my.cfg.env", "PF_TEST_ENV_KEY=${HOME_DIR}/key\n")
		cfg, err := Loader{LookupEnv: vars(map[string]string{"HOME_DIR": "/home/u"})}.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Gateway.APIKey.Reveal() != "/home/u/key" {
			t.Errorf("api_key = %q", cfg.Gateway.APIKey.Reveal())
		}
	})
}

func decodeLog(t *testing.T, b []byte) map[string]any {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("want exactly one log record, got %q", b)
	}
	var rec map[string]any
	if err := json.Unmarshal(lines[0], &rec); err != nil {
		t.Fatal(err)
	}
	delete(rec, "time")
	return rec
}

func TestFullReferenceConfig(t *testing.T) {
	path := filepath.Join("testdata", "full.toml")
	env := map[string]string{"PROMPTFORGE_MCP_API_KEY": "server-token", "PROMPTFORGE_GATEWAY_API_KEY": "gateway-token",
		"PF_RUNS_STORE": "postgres://pf:pw@db:5432/pf"}
	cfg, err := Loader{LookupEnv: vars(env)}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The reference file documents the defaults, so apart from the values
	// it sets on purpose it must equal the defaults.
	want := defaults()
	want.Path = path
	want.Dir, err = filepath.Abs(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	want.Server.AllowedHosts = []string{"localhost", "127.0.0.1"}
	want.Server.AllowedOrigins = []string{}
	key := mustSecret(t, "server-token")
	want.Server.APIKey = &key
	want.Paths.Files = []string{"."}
	want.Gateway.URL = "http://127.0.0.1:8081/v1"
	want.Gateway.APIKey = mustSecret(t, "gateway-token")
	want.Catalog = Catalog{Include: []string{"**/*.md"}, Exclude: []string{"**/_*.md", "drafts/**"}, Tools: []string{"greet", "report_*"}}
	store := mustSecret(t, "postgres://pf:pw@db:5432/pf")
	want.Runs.Store = &store
	want.Prompts = map[string]PromptBlock{
		"research_person": {Enabled: true, File: "people/research-person.md"},
		"drafty":          {Enabled: false},
	}
	want.Models = ModelTable{
		"llama3.1:8b": {Description: "General chat and summarisation; weak at code.", Context: 131072, Thinking: "never", ToolDialect: ToolDialectOpenAI,
			ThinkingSwitch: ThinkingSwitchReasoningEffort},
	}
	want.Retrieval.EmbeddingsModel, want.Retrieval.Cache = "nomic-embed-text", ".promptforge/vectors.cache"
	f := func(v float64) *float64 { return &v }
	want.Retrieval.Tools = Thresholds{SimilarityFloor: f(0.825), Margin: f(0.05), SoloFloor: f(0.5), DuplicateThreshold: f(0.98)}
	want.Retrieval.Models = Thresholds{SoloFloor: f(0.3)}
	want.Retrieval.Prompts = Thresholds{SimilarityFloor: f(0)}
	want.Limits.ProcessMemory = 1 << 30
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("full.toml =\n%+v\nwant\n%+v", cfg, want)
	}

	// Every key of the schema appears in the reference, so it stays complete.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []tomlPath{{"server"}, {"paths"}, {"gateway"}, {"catalog"}, {"tools"}, {"retrieval"}, {"retrieval", "tools"},
		{"runs"}, {"limits"}, {"observability"}, {"prompts", "x"}, {"models", "x"}} {
		keys, _ := tableKeys(table)
		for _, k := range keys {
			if !bytes.Contains(data, []byte("\n"+k+" = ")) && !bytes.Contains(data, []byte(" "+k+" = ")) { // " k = " in an inline table
				t.Errorf("testdata/full.toml does not document %s", keyName(append(table, k)))
			}
		}
	}
	// Every top-level table is written in it, and the [tools.web_search]
	// table form (a comment: web_search is written as a boolean above).
	root, _ := tableKeys(nil)
	for _, k := range root {
		if !bytes.Contains(data, []byte("\n["+k)) {
			t.Errorf("testdata/full.toml has no [%s] table", k)
		}
	}
	for _, k := range webSearchKeys {
		if !bytes.Contains(data, []byte("\n#   "+k+" = ")) {
			t.Errorf("testdata/full.toml does not document [tools.web_search].%s", k)
		}
	}
}

// The "Every key" block of docs/configuration.md is the reference file
// itself, so the page a user reads lists every key the schema has (merges
// of branches that each added a table left it behind once).
func TestConfigurationDocListsEveryKey(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "full.toml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	const open = "## Every key\n\n```toml\n"
	_, block, ok := bytes.Cut(doc, []byte(open))
	if !ok {
		t.Fatalf("docs/configuration.md has no %q block", open)
	}
	block, _, ok = bytes.Cut(block, []byte("```\n"))
	if !ok {
		t.Fatal("docs/configuration.md: the Every key block is not closed")
	}
	if !bytes.Equal(block, full) {
		t.Errorf("docs/configuration.md's Every key block differs from internal/config/testdata/full.toml; copy the file into it")
	}
}

func TestEnvFilePath(t *testing.T) {
	cases := map[string]string{
		"prompts.toml":         "prompts.env",
		"dir/my.cfg.toml":      "dir/my.cfg.env",
		"cfg":                  "cfg.env",
		"/etc/pf/prompts.toml": "/etc/pf/prompts.env",
		"dir.d/cfg":            "dir.d/cfg.env",
		".prompts":             ".prompts.env",
	}
	for in, want := range cases {
		if got := EnvFilePath(in); got != want {
			t.Errorf("EnvFilePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAwkwardStringsSurviveExpansion(t *testing.T) {
	desc := "quotes \" ' backslash \\ tab \t newline \n unicode é ${X}"
	value := "$$ and ''' and \"\"\""
	cfg := mustParse(t, minimal+"[models.m]\ndescription = "+strconv.Quote(desc)+"\n", map[string]string{"X": value})
	want := strings.Replace(desc, "${X}", value, 1)
	if got := cfg.Models["m"].Description; got != want {
		t.Errorf("description = %q, want %q", got, want)
	}
}

// A whole Config prints its two secrets redacted (the Secret type's own
// renderings are tested in package secret).
func TestConfigNeverPrintsSecrets(t *testing.T) {
	cfg := mustParse(t, strings.Replace(minimal, "[server]", "[server]\napi_key = \"hunter2\"", 1), nil)
	for _, format := range []string{"%v", "%+v", "%#v"} {
		if out := fmt.Sprintf(format, cfg); strings.Contains(out, "hunter2") || strings.Contains(out, "gateway-key") {
			t.Errorf("Sprintf(%q, config) leaked a secret: %s", format, out)
		}
	}
}

func TestCatalogToolsGlobs(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{`["report_[a"]`, `[catalog] tools pattern "report_[a" is not a valid glob over prompt names`},
		{`[""]`, `[catalog] tools pattern "" is not a valid glob`},
		{`["run_prompt"]`, `[catalog] tools pattern "run_prompt" is a built-in tool's name`},
		{`"greet"`, `array of strings`},
	} {
		t.Run(tt.value, func(t *testing.T) {
			body := "[server]\n[gateway]\nurl = \"http://127.0.0.1:1/v1\"\napi_key = \"k\"\n\n[catalog]\ntools = " + tt.value + "\n"
			_, err := Parse([]byte(body), func(string) (string, bool) { return "", false })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
	cfg, err := Parse([]byte("[server]\n[gateway]\nurl = \"http://127.0.0.1:1/v1\"\napi_key = \"k\"\n[catalog]\ntools = [\"greet\", \"report_*\"]\n"), func(string) (string, bool) { return "", false })
	if err != nil || !slices.Equal(cfg.Catalog.Tools, []string{"greet", "report_*"}) {
		t.Fatalf("tools: %v %v", cfg, err)
	}
}
