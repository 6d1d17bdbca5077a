package gateway

import (
	"strings"
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/secret"
)

// The environment variables the CLI reads when it has no prompts.toml.
const (
	EnvURL    = "PROMPTFORGE_GATEWAY_URL"
	EnvAPIKey = "PROMPTFORGE_GATEWAY_API_KEY"
)

// OptionsFromEnv reads EnvURL and EnvAPIKey through lookup (os.LookupEnv in
// production). An empty or blank value counts as unset. With neither set,
// or the URL without a key, the error wraps ErrNotConfigured, so a host
// can fall back to NewDisabled and still run a prompt that never calls a
// model, as the reference CLI does (gateway-picker-webfetch §4.1); its
// message names the variable missing. A key without a URL, or a value
// that is not UTF-8, is an error naming the variables (never a value):
// a key set on its own says a gateway was meant. The result still goes
// through New for validation.
func OptionsFromEnv(lookup func(string) (string, bool)) (Options, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return v
	}
	u, key := get(EnvURL), get(EnvAPIKey)
	notConfigured := func(why string) (Options, error) {
		return Options{}, &Error{Kind: KindConfig, err: ErrNotConfigured, msg: ErrNotConfigured.Error() + ": " + why}
	}
	switch blankURL, blankKey := strings.TrimSpace(u) == "", strings.TrimSpace(key) == ""; {
	case blankURL && blankKey:
		return notConfigured("set " + EnvURL + " and " + EnvAPIKey)
	case blankURL:
		return Options{}, configError(EnvURL + " is not set: set it to the gateway's API root (e.g. http://127.0.0.1:8081/v1) together with " + EnvAPIKey)
	case blankKey:
		return notConfigured(EnvAPIKey + " is not set or blank: set it to the gateway's bearer key (any non-empty value for a server that ignores it) together with " + EnvURL)
	case !utf8.ValidString(u):
		return Options{}, configError(EnvURL + " is not valid UTF-8: set it to a plain http(s) URL")
	case !utf8.ValidString(key):
		return Options{}, configError(EnvAPIKey + " is not valid UTF-8: set it to the gateway's bearer key")
	}
	k, _ := secret.New(key)
	return Options{BaseURL: u, APIKey: k}, nil
}
