package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRetrievalTable(t *testing.T) {
	cfg := mustParse(t, minimal+"[retrieval]\nembeddings_model = \"all-minilm\"\ncache = \"v/vectors.cache\"\ntimeout = \"5s\"\n", nil)
	if r := cfg.Retrieval; r.EmbeddingsModel != "all-minilm" || r.Cache != "v/vectors.cache" || r.Timeout != 5*time.Second {
		t.Errorf("retrieval = %+v", r)
	}
	cfg.Dir = "/etc/pf"
	if got := cfg.RetrievalCache(); got != filepath.Join("/etc/pf", "v/vectors.cache") {
		t.Errorf("cache path %q", got)
	}
	if cfg := mustParse(t, minimal, nil); cfg.Retrieval.EmbeddingsModel != "" || cfg.RetrievalCache() != "" || cfg.Retrieval.Timeout != DefaultRetrievalTimeout {
		t.Errorf("defaults %+v", cfg.Retrieval)
	}
	for _, tc := range []struct{ extra, want string }{
		{"[retrieval]\nembeddings_model = \" \"\n", "[retrieval].embeddings_model must be a model id"},
		{"[retrieval]\nembeddings_model = \"m\"\ncache = \"\"\n", "[retrieval].cache must name a file"},
		{"[retrieval]\nembeddings_model = \"m\"\ncache = \"~/v\"\n", `"~" is not expanded`},
		{"[retrieval]\nembeddings_model = \"m\"\ntimeout = \"0s\"\n", "[retrieval].timeout must be longer than 0s"},
		{"[retrieval]\nembeddings_model = \"m\"\ntimeout = \"soon\"\n", "[retrieval].timeout is not a duration"},
		{"[retrieval]\ncache = \"v\"\n", "without embeddings_model"},
		{"[retrieval]\nmodel = \"m\"\n", "[retrieval] takes embeddings_model, cache, timeout"},
	} {
		if e := parseErr(t, minimal+tc.extra, nil); !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%q: error %q, want %q", tc.extra, e.Error(), tc.want)
		}
	}
}

func TestWebSearchTable(t *testing.T) {
	cfg := mustParse(t, minimal+"[tools]\nweb_search = true\n", nil)
	if !cfg.Tools.WebSearch || cfg.Tools.Search.Provider != SearchGateway || cfg.Tools.Search.URL != "" {
		t.Errorf("boolean form: %+v", cfg.Tools)
	}
	cfg = mustParse(t, minimal+"[tools.web_search]\nprovider = \"searxng\"\nurl = \"http://127.0.0.1:8888\"\n", nil)
	if s := cfg.Tools.Search; !cfg.Tools.WebSearch || s.Provider != SearchSearxng || s.URL != "http://127.0.0.1:8888" || !s.APIKey.IsZero() {
		t.Errorf("searxng: %+v", cfg.Tools)
	}
	cfg = mustParse(t, minimal+"[tools.web_search]\nprovider = \"brave\"\napi_key = \"${BRAVE_API_KEY}\"\n", map[string]string{"BRAVE_API_KEY": "brave-token"})
	if s := cfg.Tools.Search; !cfg.Tools.WebSearch || s.Provider != SearchBrave || s.URL != DefaultBraveURL || s.APIKey.Reveal() != "brave-token" {
		t.Errorf("brave: %+v", cfg.Tools)
	}
	if strings.Contains(cfg.Tools.Search.APIKey.String(), "brave-token") {
		t.Error("the key prints")
	}
	for _, tc := range []struct{ extra, want string }{
		{"[tools.web_search]\nprovider = \"bing\"\n", `[tools.web_search].provider must be "gateway", "searxng" or "brave": "bing"`},
		{"[tools.web_search]\nprovider = \"searxng\"\n", `provider "searxng" needs url`},
		{"[tools.web_search]\nprovider = \"brave\"\n", `provider "brave" needs api_key`},
		{"[tools.web_search]\nprovider = \"gateway\"\nurl = \"http://x\"\n", `remove url and api_key`},
		{"[tools.web_search]\nprovider = \"searxng\"\nurl = \"ftp://x\"\n", `[tools.web_search].url must start with http:// or https://`},
		{"[tools.web_search]\nprovider = \"searxng\"\nurl = \"http://u:p@x\"\n", `must not contain credentials`},
		{"[tools.web_search]\nprovider = \"searxng\"\nurl = \"http://x/?q=1\"\n", `must not have a query`},
		{"[tools.web_search]\nprovider = \"brave\"\napi_key = \"\"\n", `[tools.web_search].api_key must not be empty`},
		{"[tools.web_search]\nprovider = \"searxng\"\nurl = \"http://x\"\ncount = \"3\"\n", `unknown key "count": [tools.web_search] takes provider, url, api_key`},
		{"[tools.web_search]\nprovider = 3\n", `[tools.web_search].provider must be a string`},
		{"[tools]\nweb_search = \"yes\"\n", `[tools].web_search must be true, false or a table`},
	} {
		if e := parseErr(t, minimal+tc.extra, nil); !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%q: error %q, want %q", tc.extra, e.Error(), tc.want)
		}
	}
}

func TestRetrievalAndSearchNeedARestart(t *testing.T) {
	base := mustParse(t, minimal, nil)
	next := mustParse(t, minimal+"[tools.web_search]\nprovider = \"searxng\"\nurl = \"http://x\"\n[retrieval]\nembeddings_model = \"m\"\ncache = \"c\"\ntimeout = \"3s\"\n", nil)
	got := strings.Join(base.DiffUnreloadable(next), " ")
	want := "[tools].web_search [retrieval].embeddings_model [retrieval].cache [retrieval].timeout [tools.web_search]"
	if got != want {
		t.Errorf("diff %q, want %q", got, want)
	}
}

func TestRetrievalThresholds(t *testing.T) {
	cfg := mustParse(t, minimal+"[retrieval]\nembeddings_model = \"m\"\n[retrieval.tools]\nsimilarity_floor = 0.45\nmargin = 0.02\n[retrieval.prompts]\nsimilarity_floor = 0.3\nsolo_floor = 0.3\nduplicate_threshold = 1.0\n", nil)
	r := cfg.Retrieval
	if r.Tools.SimilarityFloor == nil || *r.Tools.SimilarityFloor != 0.45 || *r.Tools.Margin != 0.02 || r.Tools.SoloFloor != nil ||
		*r.Prompts.SimilarityFloor != 0.3 || *r.Prompts.DuplicateThreshold != 1 || r.Models.SimilarityFloor != nil {
		t.Errorf("thresholds %+v", r)
	}
	for _, tc := range []struct{ extra, want string }{
		{"[retrieval]\nembeddings_model = \"m\"\n[retrieval.tools]\nmargin = 1.5\n", "[retrieval.tools].margin must be a number from 0 to 1: 1.5"},
		{"[retrieval]\nembeddings_model = \"m\"\n[retrieval.models]\nsolo_floor = -0.1\n", "[retrieval.models].solo_floor must be a number from 0 to 1"},
		{"[retrieval]\nembeddings_model = \"m\"\n[retrieval.models]\nfloor = 0.1\n", "takes similarity_floor, margin, solo_floor, duplicate_threshold"},
		{"[retrieval]\nembeddings_model = \"m\"\n[retrieval.tools]\nmargin = \"x\"\n", "a number from 0 to 1"},
		{"[retrieval.tools]\nmargin = 0.1\n", "without embeddings_model"},
	} {
		if e := parseErr(t, minimal+tc.extra, nil); !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%q: error %q, want %q", tc.extra, e.Error(), tc.want)
		}
	}
	next := mustParse(t, minimal+"[retrieval]\nembeddings_model = \"m\"\n[retrieval.tools]\nsimilarity_floor = 0.5\nmargin = 0.02\n[retrieval.prompts]\nsimilarity_floor = 0.3\nsolo_floor = 0.3\nduplicate_threshold = 1.0\n", nil)
	if got := strings.Join(cfg.DiffUnreloadable(next), " "); got != "[retrieval.tools]" {
		t.Errorf("diff %q", got)
	}
}
