package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds the loader arbitrary prompts.toml and prompts.env bytes:
// it must never panic, every failure must be a described *Error of a known
// kind whose line lies inside the file, and every success must hold the
// invariants the rest of the server relies on without checking again.
func FuzzLoad(f *testing.F) {
	if full, err := os.ReadFile(filepath.Join("testdata", "full.toml")); err == nil {
		f.Add(string(full), "PROMPTFORGE_MCP_API_KEY=t\nPROMPTFORGE_GATEWAY_API_KEY=g\n")
	}
	f.Add(minimal, "")
	f.Add(strings.Replace(minimal, "[server]", "[server]\nmax_sessions = 0\nallowed_origins = [\"null\"]", 1), "")
	f.Add(strings.Replace(minimal, "gateway-key", "${KEY}", 1), "KEY='quoted'\nexport OTHER=\"a\\nb\"\n")
	f.Add("[server]\napi_key = \"${UNSET}\"\n[gateway]\nurl = \"http://h/v1\"\napi_key = \"$${x}\"\n[paths]\nprompts = [\"a\", \"b\"]\n", "")
	f.Add("[models.\"a\"]\ncontext = 9223372036854775807\n[prompts.x]\nenabled = false\n", "\ufeffA=1\r\n")
	f.Fuzz(func(t *testing.T, toml, env string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "prompts.toml")
		if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(EnvFilePath(path), []byte(env), 0o600); err != nil {
			t.Fatal(err)
		}
		lookup := func(string) (string, bool) { return "", false }
		cfg, err := Loader{LookupEnv: lookup}.Load(path)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Error() == "" || ce.Kind.String() == "" || strings.HasPrefix(ce.Kind.String(), "Kind(") {
				t.Fatalf("error %T %q is not a described *Error of a known kind", err, err)
			}
			if cfg != nil {
				t.Fatalf("a config came back with the error %q", err)
			}
			if lines := strings.Count(toml, "\n") + 1; ce.Line < 0 || ce.Line > lines {
				t.Fatalf("error line %d outside the %d-line file: %q", ce.Line, lines, err)
			}
			return
		}
		s := cfg.Server
		switch {
		case s.MaxConcurrentRuns < 1, s.MaxSessions < 1:
			t.Fatalf("limits below 1 loaded: %+v", s)
		case s.AdmissionTimeout < 0, s.ReplyDeadline < 0, s.RetainCompleted < 0, s.WatchDebounce < 0:
			t.Fatalf("negative duration loaded: %+v", s)
		case strings.TrimSpace(cfg.Gateway.URL) == "", cfg.Gateway.APIKey.Reveal() == "":
			t.Fatalf("gateway without url or key loaded: %q", cfg.Gateway.URL)
		case len(cfg.Paths.Prompts) == 0:
			t.Fatal("no prompts directory loaded")
		case s.APIKey != nil && strings.TrimSpace(s.APIKey.Reveal()) == "":
			t.Fatal("a blank [server].api_key loaded")
		}
		if d := cfg.DiffUnreloadable(cfg); len(d) != 0 {
			t.Fatalf("a config differs from itself: %q", d)
		}
	})
}
