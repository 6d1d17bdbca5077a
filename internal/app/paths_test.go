package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// twoRootConfig writes base/conf/prompts.toml naming two prompts
// directories and a file root by relative paths, with echo in the first
// directory and greet in the second, and returns base and the config path.
func twoRootConfig(t *testing.T, serverLines string) (base, path string) {
	t.Helper()
	base = t.TempDir()
	conf := filepath.Join(base, "conf")
	servertest.WriteTree(t, filepath.Join(conf, "shared"), map[string]string{"echo.md": basePrompts["echo.md"]})
	servertest.WriteTree(t, filepath.Join(conf, "mine"), map[string]string{"greet.md": basePrompts["greet.md"]})
	servertest.WriteTree(t, base, map[string]string{
		"conf/out/keep":  "",
		"elsewhere/keep": "",
		"conf/prompts.toml": "[server]\n" + serverLines + "\n[paths]\nprompts = [\"shared\", \"./mine\"]\nfiles = [\"out\"]\n" +
			"[gateway]\nurl = \"http://127.0.0.1:1/v1\"\napi_key = \"k\"\ntimeout = \"2s\"\n[catalog]\ninclude = [\"**/*.md\"]\n",
	})
	return base, filepath.Join(conf, "prompts.toml")
}

// serve, check and run --config read the relative paths of prompts.toml
// against its directory, not the working directory an IDE starts them in.
func TestRelativePathsFollowTheConfigFile(t *testing.T) {
	base, path := twoRootConfig(t, "watch_debounce = \"50ms\"")
	conf := filepath.Dir(path)
	t.Chdir(filepath.Join(base, "elsewhere"))
	relPath := filepath.Join("..", "conf", "prompts.toml")

	t.Run("check", func(t *testing.T) {
		var out bytes.Buffer
		if err := Check(context.Background(), CheckOptions{ConfigPath: relPath, Stdout: &out, Offline: true}); err != nil {
			t.Fatalf("Check: %v", err)
		}
		if !strings.Contains(out.String(), "2 prompt(s) resolve: echo, greet") {
			t.Fatalf("check said %q", out.String())
		}
	})
	t.Run("run --config", func(t *testing.T) {
		for _, name := range []string{"echo", "greet"} {
			got, err := RunOnce(context.Background(), RunOptions{Target: name, Args: "hi " + name, ConfigPath: relPath})
			if err != nil || got != "hi "+name {
				t.Fatalf("run %s: %q, %v", name, got, err)
			}
		}
	})
	t.Run("serve and reload", func(t *testing.T) {
		log := newSignalLog()
		cs, done := bootStdio(t, relPath, log)
		defer cs.Close()
		run := func(name string) string {
			t.Helper()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": name, "args": "x"}})
			if err != nil {
				t.Fatalf("run_prompt %s: %v", name, err)
			}
			return servertest.TextOf(t, res)
		}
		if run("echo") != "x" || run("greet") != "x" {
			t.Fatalf("the prompts of both directories are not served; log:\n%s", log.text())
		}
		want := "INFO prompts directory resolved against the config file's directory; [paths].files entries are read from it" +
			" config_dir=" + conf + " prompts=" + filepath.Join(conf, "shared") + ", " + filepath.Join(conf, "mine") + " files=" + filepath.Join(conf, "out")
		if !strings.Contains(log.text(), want) {
			t.Errorf("log lacks\n%s\n:\n%s", want, log.text())
		}

		// A save in the second directory is picked up: it is watched by its
		// resolved path, not by one relative to the working directory.
		reloaded := log.on("reloaded ")
		servertest.WriteTree(t, filepath.Join(conf, "mine"), map[string]string{"late.md": luaPrompt("late", "Arrive after boot.", "return 'late value'")})
		select {
		case <-reloaded:
		case <-time.After(10 * time.Second):
			t.Fatalf("no reload within 10s; log:\n%s", log.text())
		}
		if got := run("late"); got != "late value" {
			t.Fatalf("late: %q", got)
		}
		cs.Close()
		if err := <-done; err != nil {
			t.Fatalf("Boot: %v", err)
		}
	})
}

// Every prompts directory is one output_file may not write into.
func TestOwnFilesListEveryPromptsDirectory(t *testing.T) {
	_, path := twoRootConfig(t, "")
	conf := filepath.Dir(path)
	t.Chdir(t.TempDir())
	cfg, err := config.Loader{LookupEnv: func(string) (string, bool) { return "", false }}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	secret, prompts := ownFiles(path, cfg)
	if want := []string{filepath.Join(conf, "shared"), filepath.Join(conf, "mine")}; !slices.Equal(prompts, want) {
		t.Errorf("prompts dirs %q, want %q", prompts, want)
	}
	if want := []string{path, filepath.Join(conf, "prompts.env")}; !slices.Equal(secret, want) {
		t.Errorf("secret files %q, want %q", secret, want)
	}
	if _, err := os.Stat(prompts[1]); err != nil {
		t.Errorf("the second directory is not where the file put it: %v", err)
	}
}
