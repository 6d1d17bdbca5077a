package app

import (
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// promptFile renders a prompt file with the given frontmatter extras and
// body (everything after the frontmatter).
func promptFile(name, description, extra, body string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\npromptforge: 1\n" + extra + "---\n" + body
}

// luaPrompt is a prompt whose one section runs lua and returns its value.
func luaPrompt(name, description, lua string) string {
	return promptFile(name, description, "", "# "+strings.ToUpper(name[:1])+name[1:]+"\n\n## Run\n\n```lua\n"+lua+"\n```\n")
}

// basePrompts is the catalog the boot tests serve.
var basePrompts = map[string]string{
	"echo.md":  luaPrompt("echo", "Return the arguments unchanged.", "return args"),
	"greet.md": luaPrompt("greet", "Greet someone by name.", "return args"),
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
