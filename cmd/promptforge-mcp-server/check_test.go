package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// ollamaModel is a /v1/models entry as Ollama sends it: an id, nothing a
// binding could use.
func ollamaModel(id string) map[string]any {
	return map[string]any{"id": id, "object": "model", "created": 1764590000, "owned_by": "library"}
}

// The shipped example catalog binds against a stock Ollama with any of the
// chat models its prompts.toml describes pulled, alone or together.
func TestCheckTheShippedExampleAgainstAStockOllama(t *testing.T) {
	t.Chdir("../../examples")
	ids := []string{"llama3.1:latest", "qwen2.5:latest", "llama3.2:latest", "mistral:latest", "gemma3:latest"}
	g := gatewaytest.New(t)
	for set := 1; set < 1<<len(ids); set++ {
		var served []map[string]any
		var names []string
		for i, id := range ids {
			if set&(1<<i) != 0 {
				served = append(served, ollamaModel(id))
				names = append(names, id)
			}
		}
		g.SetModels(served...)
		code, out, errOut := call(t, gatewayEnv(g), "check", "prompts.toml")
		if code != exitOK {
			t.Fatalf("pulled %v: exit %d, stdout:\n%s\nstderr:\n%s", names, code, out, errOut)
		}
		if set == 1 && !strings.Contains(squash(out), `summarize model "writer" llama3.1:latest`) {
			t.Fatalf("pulled %v: stdout:\n%s", names, out)
		}
	}
	// None pulled: check fails and says what to pull.
	g.SetModels()
	code, out, errOut := call(t, gatewayEnv(g), "check", "prompts.toml")
	if code != exitFailure || !strings.Contains(errOut, "ollama pull") || !strings.Contains(out, "0 model(s) for binding") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestCheckPreflight(t *testing.T) {
	g := gatewaytest.New(t)
	prose := "---\nname: %s\ndescription: The %s prompt.\npromptforge: 1\n---\n# T\n\n```lua\n%s\n```\n%s\n## A\n\nSpeak.\n"
	files := map[string]string{
		"echo.md":  promptText("echo", "return args"),
		"greet.md": fmt.Sprintf(prose, "greet", "greet", `models.default("writer", "A general assistant model")`, ""),
		"chat.md":  fmt.Sprintf(prose, "chat", "chat", `models.default("writer", "A general assistant model")`, "Say hello first.\n"),
	}
	files["fetch.md"] = fmt.Sprintf(prose, "fetch", "fetch", `tools.need("page", "Fetch a web page and return its main content as markdown.")`, "")
	path := writeConfig(t, `api_key = "k"`, g.URL(), g.APIKey(), files)
	// Tool needs bind against the live tools [tools] enables, as in serve.
	appendFile(t, path, "[tools]\nweb_fetch = true\n")

	code, out, errOut := call(t, nil, "check", path)
	for _, want := range []string{
		"1 model(s) for binding", "test-model: A general assistant model for tests",
		`greet model "writer" test-model`,
		`fetch tool "page" promptforge/web_fetch`,
		"echo - no model or tool needs",
		"cannot check statically: the H1 makes a model call",
	} {
		if code != exitOK || !strings.Contains(squash(out), want) {
			t.Errorf("exit %d, stdout lacks %q:\n%s\nstderr:\n%s", code, want, out, errOut)
		}
	}
	if n := len(g.Requests()); n != 0 {
		t.Fatalf("the preflight made %d chat requests", n)
	}

	// A need that binds to nothing fails the check, naming the prompt.
	g.SetModels()
	code, out, errOut = call(t, nil, "check", path)
	if code != exitFailure || !strings.Contains(squash(out), `greet model "writer" NOTHING: no model matches`) ||
		!strings.Contains(errOut, `greet: needs a model for "writer" (A general assistant model) but no model is available`) {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// --offline contacts nothing and binds nothing.
	calls := g.ModelsCalls()
	if code, out, errOut = call(t, nil, "check", "--offline", path); code != exitOK || strings.Contains(out, "needs") || g.ModelsCalls() != calls {
		t.Fatalf("--offline: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestCheckPreflightNamesWhatToFix(t *testing.T) {
	g := gatewaytest.New(t)
	files := map[string]string{"echo.md": promptText("echo", "return args")}
	for _, tc := range []struct {
		name, url, key string
		want           []string
	}{
		{"a URL without /v1", strings.TrimSuffix(g.URL(), "/v1"), g.APIKey(), []string{"answered 404 Not Found for GET /models", "[gateway].url lacks /v1: set it to " + g.URL()}},
		{"a refused key", g.URL(), "wrong", []string{"refused the API key (401)", "set [gateway].api_key"}},
		{"nothing listening", "http://127.0.0.1:1/v1", "k", []string{"http://127.0.0.1:1/v1 is not reachable", "--offline"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := call(t, nil, "check", writeConfig(t, "", tc.url, tc.key, files))
			if code != exitFailure || !strings.Contains(errOut, "error: check the model server") {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
	// A 403 names the same setting.
	g.SetModelsReply(gatewaytest.Status(http.StatusForbidden, `{"error":{"message":"forbidden"}}`))
	if code, _, errOut := call(t, nil, "check", writeConfig(t, "", g.URL(), g.APIKey(), files)); code != exitFailure || !strings.Contains(errOut, "refused the API key (403)") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}

// squash collapses the table's column padding to one space.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A [runs].store URL that serve cannot read fails its boot over either
// transport, so check fails on it too, offline included, without printing
// the password.
func TestCheckRefusesARunStoreURLServeCannotRead(t *testing.T) {
	files := map[string]string{"echo.md": promptText("echo", "return args")}
	path := writeConfig(t, "", "", "", files)
	appendFile(t, path, "[runs]\nstore = \"postgres://pf:hunter2@db.internal:5432/pf?sslmode=bogus\"\n")
	code, out, errOut := call(t, nil, "check", "--offline", path)
	if code != exitFailure || !strings.Contains(errOut, "open the run store") || !strings.Contains(errOut, "sslmode is invalid") ||
		!strings.Contains(errOut, "postgres://user:password@host:port/database") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "hunter2") {
		t.Fatalf("the password was printed:\n%s%s", out, errOut)
	}
	// A URL it can read passes offline: nothing is contacted.
	path = writeConfig(t, "", "", "", files)
	appendFile(t, path, "[runs]\nstore = \"postgres://pf:hunter2@127.0.0.1:1/pf\"\n")
	if code, out, errOut := call(t, nil, "check", "--offline", path); code != exitOK {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
