package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/promptforge-go/promptforge/internal/apiurl"
	"github.com/promptforge-go/promptforge/internal/names"
)

// parseBind reads [server].bind: an IP literal and a port, as Rust's
// SocketAddr parses it. Host names are refused so the listener is exactly
// the address written, never whatever a resolver answers.
func parseBind(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err == nil && ap.Addr().Zone() != "" && !allDigits(ap.Addr().Zone()) {
		err = errors.New("an IPv6 zone must be a numeric scope id")
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf(`[server].bind must be an IP address and a port, such as "127.0.0.1:9310" or "[::1]:9310" (host names like localhost are not accepted): %q: %w`, s, err)
	}
	return ap, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// checkGatewayURL applies mcp-server §2.2's [gateway].url rules (apiurl's shape
// rule) to the trimmed value; the caller stores the value untrimmed. The
// rest of the API-root rule (no userinfo, query or fragment) is applied
// when the gateway client is built, as the reference does.
func checkGatewayURL(raw string) error {
	_, err := apiurl.CheckShape(strings.TrimSpace(raw))
	if err == nil {
		return nil
	}
	switch err.Problem {
	case apiurl.Empty:
		return errors.New("[gateway].url must not be empty: set it to the gateway's API root, such as \"http://127.0.0.1:8081/v1\"")
	case apiurl.Unparseable:
		return fmt.Errorf("[gateway].url must be a valid http or https URL: %q: %w", raw, err.Err)
	case apiurl.NoScheme, apiurl.BadScheme:
		return fmt.Errorf("[gateway].url must be an http or https URL: %q (write the scheme, as in \"http://host:port/v1\")", raw)
	default: // apiurl.NoHost
		return fmt.Errorf("[gateway].url must have a host: %q", raw)
	}
}

// checkPromptName applies the [prompts.NAME] key rules: NAME is what
// callers type, so it must be a tool-safe identifier and must not shadow
// one of the server's own tools.
func checkPromptName(name string) error {
	if !names.ValidName(name) {
		return fmt.Errorf("[prompts.%s] key is not ^[a-z][a-z0-9_]{0,47}$ (use a lowercase letter, then lowercase letters, digits or _, at most 48 in all)", name)
	}
	if names.IsReserved(name) {
		return fmt.Errorf("[prompts.%s] key is reserved: %s are the server's own tools; give the prompt another name",
			name, strings.Join(names.Reserved(), ", "))
	}
	return nil
}

// CheckRelativePath is the shape check of mcp-server §2.3, applied to every
// [catalog] pattern and [prompts.NAME].file: p must be relative to the
// prompts directory (no root, no drive or UNC prefix) and must not contain
// a ".." component anywhere, so nothing outside the prompts directory can
// be named. "." components are fine. Catalog resolution can call it too.
func CheckRelativePath(p string) error {
	if p != "" && (os.IsPathSeparator(p[0]) || hasVolume(p)) {
		return fmt.Errorf("%s must be relative to the prompts directory", p)
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) }) {
		if part == ".." {
			return fmt.Errorf("%s must not climb above the prompts directory with `..`", p)
		}
	}
	return nil
}

// checkGlob checks that a [catalog] pattern means the same here as in the
// reference's glob dialect (mcp-server §2.3): ? * ** and [...] / [!...] classes
// only. Constructs doublestar would read differently are refused rather
// than silently matching other files: {a,b} alternation (literal braces in
// the reference), backslash escapes, [^...] negation, and ** that is not a
// whole path component.
func checkGlob(p string) error {
	if p == "" {
		return errors.New("a pattern must not be empty")
	}
	if err := CheckRelativePath(p); err != nil {
		return err
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '{', '}':
			return fmt.Errorf("braces are not pattern syntax here ({a,b} alternation is not supported); write one pattern per alternative, or [%c] for a literal %c", c, c)
		case '\\':
			return errors.New(`backslashes are not allowed in patterns; separate directories with "/"`)
		case '[':
			end, err := classEnd(p, i)
			if err != nil {
				return err
			}
			i = end
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			switch {
			case j-i > 2:
				return errors.New("wildcards are either * or ** (a whole path component), never three or more stars")
			case j-i == 2:
				if (i > 0 && p[i-1] != '/') || (j < len(p) && p[j] != '/') {
					return errors.New("** must be a whole path component, as in \"a/**/b\" or \"**/*.md\", not part of a name")
				}
			}
			i = j - 1
		}
	}
	if !doublestar.ValidatePattern(p) {
		return errors.New("the pattern is not valid")
	}
	return nil
}

// classEnd returns the index of the ] closing the class that opens at
// p[i]. A class may not be empty or start with ] (the reference would read
// that ] as a member, doublestar as the end).
func classEnd(p string, i int) (int, error) {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		return 0, errors.New("negate a character class with [!...], not [^...]")
	}
	if j < len(p) && p[j] == '!' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		return 0, errors.New("a character class must not be empty or start with ]")
	}
	end := strings.IndexByte(p[j:], ']')
	if end < 0 {
		return 0, errors.New("a character class opened with [ is not closed with ]")
	}
	return j + end, nil
}

// checkThinking validates a [models."<id>"].thinking value.
func checkThinking(v string) bool {
	switch v {
	case "never", "always", "switchable":
		return true
	}
	return false
}

// thinkingSwitches lists thinking_switch's values for messages, each with
// the servers it suits.
const thinkingSwitches = `"chat_template_kwargs" (vLLM, llama.cpp), "reasoning_effort" (Ollama, OpenAI), "none"`

// checkThinkingSwitch validates a thinking_switch value.
func checkThinkingSwitch(v string) bool {
	switch v {
	case ThinkingSwitchTemplateKwargs, ThinkingSwitchReasoningEffort, ThinkingSwitchNone:
		return true
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
