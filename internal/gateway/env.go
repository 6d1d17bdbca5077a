package gateway

import (
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/secret"
)

// The environment variables the CLI reads when it has no prompts.toml.
const (
	EnvURL    = "PROMPTFORGE_GATEWAY_URL"
	EnvAPIKey = "PROMPTFORGE_GATEWAY_API_KEY"
)

// OptionsFromEnv reads EnvURL and EnvAPIKey through lookup (os.LookupEnv in
// production). An empty value counts as unset. With neither set the error
// wraps ErrNotConfigured, so a host can fall back to NewDisabled; with only
// one set, or a value that is not UTF-8, the error names the variable (and
// never its value). The result still goes through New for validation.
func OptionsFromEnv(lookup func(string) (string, bool)) (Options, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return v
	}
	u, key := get(EnvURL), get(EnvAPIKey)
	switch {
	case u == "" && key == "":
		return Options{}, &Error{Kind: KindConfig, err: ErrNotConfigured,
			msg: "no gateway configured: set " + EnvURL + " and " + EnvAPIKey}
	case u == "":
		return Options{}, configError(EnvURL + " is not set: set it to the gateway's API root (e.g. http://127.0.0.1:8081/v1) together with " + EnvAPIKey)
	case key == "":
		return Options{}, configError(EnvAPIKey + " is not set: set it to the gateway's bearer key together with " + EnvURL)
	case !utf8.ValidString(u):
		return Options{}, configError(EnvURL + " is not valid UTF-8: set it to a plain http(s) URL")
	case !utf8.ValidString(key):
		return Options{}, configError(EnvAPIKey + " is not valid UTF-8: set it to the gateway's bearer key")
	}
	// A whitespace-only key wraps to the zero Secret, which New refuses
	// with its "key is empty" message, as it did the blank string.
	k, _ := secret.New(key)
	return Options{BaseURL: u, APIKey: k}, nil
}
