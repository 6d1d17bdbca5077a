package config

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/promptforge-go/promptforge/internal/humantime"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// DefaultRetrievalTimeout is [retrieval].timeout's default: one
// embeddings request embeds a catalog's texts in seconds on a local
// server, and a binding waits on it, so a silent server should turn into
// the lexical fallback well before a chat request's two minutes.
const DefaultRetrievalTimeout = 30 * time.Second

// Web search providers, [tools.web_search].provider.
const (
	SearchGateway = "gateway"
	SearchSearxng = "searxng"
	SearchBrave   = "brave"
)

// DefaultBraveURL is the Brave Search API's web search endpoint, the
// default [tools.web_search].url for provider "brave".
const DefaultBraveURL = "https://api.search.brave.com/res/v1/web/search"

// Retrieval is the [retrieval] table: how needs are ranked
// (gateway-picker-webfetch §2).
type Retrieval struct {
	// EmbeddingsModel is the model id the gateway's /embeddings serves;
	// "" (the default) ranks with the lexical ranker only.
	EmbeddingsModel string
	// Cache is the vector cache file as written; "" keeps vectors in
	// memory only. [Config.RetrievalCache] resolves it against Dir.
	Cache string
	// Timeout bounds one embeddings request.
	Timeout time.Duration
	// Tools, Models and Prompts override the embedding ranker's decision
	// thresholds for tools.need, models.need and need_prompt
	// ([retrieval.tools] and so on); nil fields keep the defaults.
	Tools, Models, Prompts Thresholds
}

// Thresholds are one use's decision thresholds (gateway-picker-webfetch
// §2.5), each in [0, 1]; nil leaves the default.
type Thresholds struct {
	SimilarityFloor    *float64
	Margin             *float64
	SoloFloor          *float64
	DuplicateThreshold *float64
}

// WebSearch is how web_search searches: [tools].web_search = true, or the
// [tools.web_search] table.
type WebSearch struct {
	// Provider is SearchGateway (the default), SearchSearxng or
	// SearchBrave.
	Provider string
	// URL is the SearXNG instance's root (provider searxng) or the Brave
	// endpoint (provider brave, DefaultBraveURL unless set); "" for the
	// gateway, which searches at its own URL.
	URL string
	// APIKey is Brave's subscription token, or SearXNG's bearer token when
	// the instance sits behind one; zero when not set.
	APIKey secret.Secret
}

type rawRetrieval struct {
	EmbeddingsModel *string        `toml:"embeddings_model"`
	Cache           *string        `toml:"cache"`
	Timeout         *string        `toml:"timeout"`
	Tools           *rawThresholds `toml:"tools"`
	Models          *rawThresholds `toml:"models"`
	Prompts         *rawThresholds `toml:"prompts"`
}

type rawThresholds struct {
	SimilarityFloor    *float64 `toml:"similarity_floor"`
	Margin             *float64 `toml:"margin"`
	SoloFloor          *float64 `toml:"solo_floor"`
	DuplicateThreshold *float64 `toml:"duplicate_threshold"`
}

// thresholdKeys are the keys of [retrieval.tools], [retrieval.models] and
// [retrieval.prompts].
var thresholdKeys = []string{"similarity_floor", "margin", "solo_floor", "duplicate_threshold"}

// RetrievalCache is [retrieval].cache read against Dir; "" when unset.
func (c *Config) RetrievalCache() string {
	if c.Retrieval.Cache == "" {
		return ""
	}
	return c.resolve(c.Retrieval.Cache)
}

func (p *parser) buildRetrieval(r *rawRetrieval, dst *Retrieval) error {
	at := func(k string) tomlPath { return tomlPath{"retrieval", k} }
	if r.EmbeddingsModel != nil {
		m := *r.EmbeddingsModel
		if strings.TrimSpace(m) == "" || strings.TrimSpace(m) != m {
			return p.fail(at("embeddings_model"), fmt.Sprintf("[retrieval].embeddings_model must be a model id without surrounding spaces, such as \"nomic-embed-text\": %q; leave the key out to rank lexically", m))
		}
		dst.EmbeddingsModel = m
	}
	if r.Cache != nil {
		c := *r.Cache
		if strings.TrimSpace(c) == "" {
			return p.fail(at("cache"), "[retrieval].cache must name a file, such as \".promptforge/vectors.cache\"; leave the key out to keep vectors in memory only")
		}
		if err := checkTilde("[retrieval].cache", c); err != nil {
			return p.fail(at("cache"), err.Error())
		}
		dst.Cache = c
	}
	if r.Timeout != nil {
		v, err := humantime.Parse(*r.Timeout)
		if err != nil {
			return p.fail(at("timeout"), "[retrieval].timeout is not a duration: "+err.Error())
		}
		if v <= 0 {
			return p.fail(at("timeout"), "[retrieval].timeout must be longer than 0s: it bounds each embeddings request")
		}
		dst.Timeout = v
	}
	for _, u := range []struct {
		name string
		raw  *rawThresholds
		dst  *Thresholds
	}{{"tools", r.Tools, &dst.Tools}, {"models", r.Models, &dst.Models}, {"prompts", r.Prompts, &dst.Prompts}} {
		if u.raw == nil {
			continue
		}
		for _, f := range []struct {
			key string
			v   *float64
			dst **float64
		}{
			{"similarity_floor", u.raw.SimilarityFloor, &u.dst.SimilarityFloor},
			{"margin", u.raw.Margin, &u.dst.Margin},
			{"solo_floor", u.raw.SoloFloor, &u.dst.SoloFloor},
			{"duplicate_threshold", u.raw.DuplicateThreshold, &u.dst.DuplicateThreshold},
		} {
			if f.v == nil {
				continue
			}
			if math.IsNaN(*f.v) || *f.v < 0 || *f.v > 1 {
				return p.fail(tomlPath{"retrieval", u.name, f.key}, fmt.Sprintf("[retrieval.%s].%s must be a number from 0 to 1: %v", u.name, f.key, *f.v))
			}
			*f.dst = f.v
		}
	}
	if dst.EmbeddingsModel == "" && (r.Cache != nil || r.Timeout != nil || r.Tools != nil || r.Models != nil || r.Prompts != nil) {
		return p.fail(tomlPath{"retrieval"}, "[retrieval] sets cache, timeout or thresholds without embeddings_model: set embeddings_model to a model the gateway serves for /embeddings, or remove the table")
	}
	return nil
}

// webSearchKeys are the keys the [tools.web_search] table takes.
var webSearchKeys = []string{"provider", "url", "api_key"}

// buildWebSearch reads [tools].web_search: a boolean, or a table that
// switches web_search on and says where it searches.
func (p *parser) buildWebSearch(v any, on *bool, dst *WebSearch) error {
	at := tomlPath{"tools", "web_search"}
	dst.Provider = SearchGateway
	switch t := v.(type) {
	case nil:
		return nil
	case bool:
		*on = t
		return nil
	case map[string]any:
		*on = true
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if !slices.Contains(webSearchKeys, k) {
				return p.fail(append(at, k), fmt.Sprintf("unknown key %q: [tools.web_search] takes %s", k, strings.Join(webSearchKeys, ", ")))
			}
			if _, ok := t[k].(string); !ok {
				return p.fail(append(at, k), fmt.Sprintf("[tools.web_search].%s must be a string: it is %s", k, tomlTypeName(t[k])))
			}
		}
	default:
		return p.fail(at, fmt.Sprintf("[tools].web_search must be true, false or a table with provider, url and api_key: it is %s", tomlTypeName(v)))
	}
	t := v.(map[string]any)
	str := func(k string) string { s, _ := t[k].(string); return s }
	if s, ok := t["provider"]; ok {
		dst.Provider = s.(string)
	}
	rawURL, hasURL := t["url"]
	key := str("api_key")
	_, hasKey := t["api_key"]
	if hasKey {
		s, err := secret.New(key)
		if err != nil {
			return p.fail(append(at, "api_key"), "[tools.web_search].api_key must not be empty: remove it, or set it (for example \"${BRAVE_API_KEY}\")")
		}
		dst.APIKey = s
	}
	switch dst.Provider {
	case SearchGateway:
		if hasURL || hasKey {
			return p.fail(at, "[tools.web_search] provider \"gateway\" searches at [gateway].url with its key: remove url and api_key, or choose provider \"searxng\" or \"brave\"")
		}
	case SearchSearxng:
		if !hasURL {
			return p.fail(at, "[tools.web_search] provider \"searxng\" needs url, the SearXNG instance's root, such as \"http://127.0.0.1:8888\" (its JSON format must be enabled in settings.yml: search.formats includes json)")
		}
	case SearchBrave:
		if !hasKey {
			return p.fail(at, "[tools.web_search] provider \"brave\" needs api_key, the Brave Search API subscription token (for example \"${BRAVE_API_KEY}\")")
		}
		if !hasURL {
			rawURL = DefaultBraveURL
		}
	default:
		return p.fail(append(at, "provider"), fmt.Sprintf("[tools.web_search].provider must be %q, %q or %q: %q", SearchGateway, SearchSearxng, SearchBrave, dst.Provider))
	}
	if rawURL != nil {
		u := rawURL.(string)
		if err := checkSearchURL(u); err != nil {
			return p.fail(append(at, "url"), "[tools.web_search].url "+err.Error())
		}
		dst.URL = u
	}
	return nil
}

// checkSearchURL wants an absolute http(s) URL without credentials or a
// fragment: a key goes in api_key, where it is never printed.
func checkSearchURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("cannot be parsed: use an absolute http(s) URL such as \"http://127.0.0.1:8888\"")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must start with http:// or https://: %q", u.Redacted())
	case u.Host == "":
		return fmt.Errorf("has no host: use an absolute http(s) URL such as \"http://127.0.0.1:8888\"")
	case u.User != nil:
		return fmt.Errorf("must not contain credentials (user:password@): put the key in api_key instead")
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("must not have a query or a fragment: give only the endpoint")
	}
	return nil
}

// diffRetrieval lists the [retrieval] and [tools.web_search] settings
// that differ between c and next: the ranker, its cache and the search
// backend are built once at boot.
func (c *Config) diffRetrieval(next *Config) []string {
	var out []string
	add := func(changed bool, name string) {
		if changed {
			out = append(out, name)
		}
	}
	add(c.Retrieval.EmbeddingsModel != next.Retrieval.EmbeddingsModel, "[retrieval].embeddings_model")
	add(c.Retrieval.Cache != next.Retrieval.Cache, "[retrieval].cache")
	add(c.Retrieval.Timeout != next.Retrieval.Timeout, "[retrieval].timeout")
	add(!c.Retrieval.Tools.equal(next.Retrieval.Tools), "[retrieval.tools]")
	add(!c.Retrieval.Models.equal(next.Retrieval.Models), "[retrieval.models]")
	add(!c.Retrieval.Prompts.equal(next.Retrieval.Prompts), "[retrieval.prompts]")
	a, b := c.Tools.Search, next.Tools.Search
	add(a.Provider != b.Provider || a.URL != b.URL || a.APIKey != b.APIKey, "[tools.web_search]")
	return out
}

func (t Thresholds) equal(u Thresholds) bool {
	same := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return same(t.SimilarityFloor, u.SimilarityFloor) && same(t.Margin, u.Margin) &&
		same(t.SoloFloor, u.SoloFloor) && same(t.DuplicateThreshold, u.DuplicateThreshold)
}
