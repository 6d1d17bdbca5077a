package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/redact"
)

// Identity and limits of web_search (prompt-language §6.2 and
// gateway-picker-webfetch §1.14(c)). The request's timeout and reply cap
// are the gateway client's (gateway.SearchTimeout,
// gateway.MaxSearchReplyBytes).
const (
	WebSearchName        = "web_search"
	WebSearchDescription = "Search the web and return a list of results (title, url, description)."

	maxQueryChars      = 400
	maxSearchCount     = 20
	maxSearchLangChars = 128
	maxDomains         = 20
)

// Searcher runs one web search: it sends query, a JSON object of the
// validated arguments, to the search backend and returns the reply,
// checked to be a JSON object with a results array. *gateway.Client (the
// gateway's /tools/web_search) and *gateway.SearchBackend (SearXNG, Brave)
// implement it; the interface is here so that web_search depends on what
// it calls, not on how the backend is reached.
type Searcher interface {
	Search(ctx context.Context, query json.RawMessage) (json.RawMessage, error)
}

// WebSearch is the web_search tool: it validates the model's arguments
// against a closed schema, hands them to a Searcher (the gateway's
// POST {base}/tools/web_search), and gives the raw reply to the model as
// untrusted text. It is safe for concurrent use.
type WebSearch struct {
	searcher Searcher
	base     string
	desc     Descriptor
}

// NewWebSearch builds web_search over searcher: the run's *gateway.Client,
// or the *gateway.SearchBackend [tools.web_search] names.
func NewWebSearch(searcher Searcher) (*WebSearch, error) {
	if searcher == nil {
		return nil, errors.New("web_search: no gateway client to search with; configure the gateway ([gateway] in prompts.toml, or PROMPTFORGE_GATEWAY_URL and PROMPTFORGE_GATEWAY_API_KEY)")
	}
	s := &WebSearch{
		searcher: searcher,
		desc: Descriptor{
			ID:          ID{Server: ServerName, Name: WebSearchName},
			WireName:    WebSearchName,
			Description: WebSearchDescription,
			Parameters:  webSearchSchema(),
		},
	}
	// The gateway client says where it sends (never its key), which is
	// what String and LogValue show.
	if b, ok := searcher.(interface{ BaseURL() string }); ok {
		s.base = b.BaseURL()
	}
	return s, nil
}

// Descriptor implements Tool.
func (s *WebSearch) Descriptor() Descriptor { return s.desc }

// String never shows the key.
func (s *WebSearch) String() string { return "web_search(" + s.base + ")" }

// LogValue never shows the key.
func (s *WebSearch) LogValue() slog.Value {
	return slog.GroupValue(slog.String("tool", WebSearchName), slog.String("gateway", s.base))
}

func webSearchSchema() json.RawMessage {
	domains := func(what string) map[string]any {
		return map[string]any{
			"type":        "array",
			"maxItems":    maxDomains,
			"items":       map[string]any{"type": "string", "minLength": 1},
			"description": what + " Bare host names such as example.org, no scheme or path.",
		}
	}
	schema := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"query"},
		"properties": map[string]any{
			"query": map[string]any{
				"type": "string", "minLength": 1, "maxLength": maxQueryChars,
				"description": "What to search for.",
			},
			"count": map[string]any{
				"type": "integer", "minimum": 1, "maximum": maxSearchCount,
				"description": "How many results to return.",
			},
			"freshness": map[string]any{
				"type": "string", "enum": []string{"pd", "pw", "pm", "py"},
				"description": "Only results from the past day, week, month or year.",
			},
			"country": map[string]any{
				"type":        "string",
				"description": "Two-letter country code to favour, e.g. us.",
			},
			"search_lang": map[string]any{
				"type": "string", "minLength": 1, "maxLength": maxSearchLangChars,
				"description": "Language code of the results, e.g. en.",
			},
			"safesearch": map[string]any{
				"type": "string", "enum": []string{"off", "moderate", "strict"},
				"description": "Adult-content filtering.",
			},
			"include_domains": domains("Only return results from these domains (and their subdomains)."),
			"exclude_domains": domains("Never return results from these domains (or their subdomains)."),
		},
	}
	b, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tools: web_search schema does not marshal: %v", err))
	}
	return b
}

// searchRequest is the body sent to the backend: the validated
// arguments, with absent and blank optional fields left out (the
// gateway's SearchQuery, which every backend reads).
type searchRequest = gateway.SearchQuery

// parseSearchArgs validates raw against the closed schema. JSON null and
// blank strings count as absent for optional fields, as the gateway
// treats them.
func parseSearchArgs(raw json.RawMessage) (searchRequest, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return searchRequest{}, invalidArgs("web_search: arguments must be a JSON object with a query")
	}
	var req searchRequest
	str := func(key string) (string, bool, error) {
		v, ok := m[key]
		if !ok || isJSONNull(v) {
			return "", false, nil
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false, invalidArgs("web_search: %s must be a string", key)
		}
		return s, strings.TrimSpace(s) != "", nil
	}
	for key := range m {
		switch key {
		case "query", "count", "freshness", "country", "search_lang", "safesearch", "include_domains", "exclude_domains":
		default:
			return searchRequest{}, invalidArgs("web_search: unknown argument %q; allowed are query, count, freshness, country, search_lang, safesearch, include_domains, exclude_domains", redact.Text(key, 40))
		}
	}

	q, present, err := str("query")
	switch {
	case err != nil:
		return searchRequest{}, err
	case !present:
		return searchRequest{}, invalidArgs("web_search: query is required and must not be blank")
	case utf8.RuneCountInString(q) > maxQueryChars:
		return searchRequest{}, invalidArgs("web_search: query must be at most %d characters", maxQueryChars)
	}
	req.Query = q

	if v, ok := m["count"]; ok && !isJSONNull(v) {
		n, ok := positiveInteger(v)
		if !ok || n > maxSearchCount {
			return searchRequest{}, invalidArgs("web_search: count must be an integer from 1 to %d", maxSearchCount)
		}
		req.Count = n
	}

	enum := func(key string, allowed ...string) (string, error) {
		s, present, err := str(key)
		if err != nil || !present {
			return "", err
		}
		for _, a := range allowed {
			if s == a {
				return s, nil
			}
		}
		return "", invalidArgs("web_search: %s must be one of %s", key, strings.Join(allowed, ", "))
	}
	if req.Freshness, err = enum("freshness", "pd", "pw", "pm", "py"); err != nil {
		return searchRequest{}, err
	}
	if req.Safesearch, err = enum("safesearch", "off", "moderate", "strict"); err != nil {
		return searchRequest{}, err
	}
	if s, present, err := str("country"); err != nil {
		return searchRequest{}, err
	} else if present {
		req.Country = s
	}
	if s, present, err := str("search_lang"); err != nil {
		return searchRequest{}, err
	} else if present {
		if utf8.RuneCountInString(s) > maxSearchLangChars {
			return searchRequest{}, invalidArgs("web_search: search_lang must be at most %d characters", maxSearchLangChars)
		}
		req.SearchLang = s
	}
	if req.IncludeDomains, err = domainList(m, "include_domains"); err != nil {
		return searchRequest{}, err
	}
	if req.ExcludeDomains, err = domainList(m, "exclude_domains"); err != nil {
		return searchRequest{}, err
	}
	return req, nil
}

func domainList(m map[string]json.RawMessage, key string) ([]string, error) {
	v, ok := m[key]
	if !ok || isJSONNull(v) {
		return nil, nil
	}
	var list []string
	if json.Unmarshal(v, &list) != nil {
		return nil, invalidArgs("web_search: %s must be an array of host names", key)
	}
	if len(list) > maxDomains {
		return nil, invalidArgs("web_search: %s may list at most %d domains", key, maxDomains)
	}
	for _, d := range list {
		if d == "" || strings.ContainsFunc(d, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) }) {
			return nil, invalidArgs("web_search: %s entry %q must be a bare host name (no scheme, path, whitespace or control characters)", key, redact.Text(d, 80))
		}
	}
	return list, nil
}

// Call implements Tool.
func (s *WebSearch) Call(ctx context.Context, raw json.RawMessage) (Result, error) {
	req, err := parseSearchArgs(raw)
	if err != nil {
		return Result{}, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Result{}, &Error{Kind: KindOther, Msg: "web_search: cannot encode the request", Err: err}
	}
	reply, err := s.searcher.Search(ctx, body)
	if err != nil {
		return Result{}, searchError(ctx, err)
	}
	return Result{Text: string(reply)}, nil
}

// searchError classifies a Searcher failure for the run: the message is
// the gateway's, prefixed with the tool's name.
func searchError(ctx context.Context, err error) *Error {
	var ge *gateway.Error
	switch {
	case ctx.Err() != nil:
		return cancelled(WebSearchName, ctx.Err())
	case !errors.As(err, &ge):
		return &Error{Kind: KindOther, Msg: "web_search: " + err.Error(), Err: err}
	}
	kind := KindOther
	switch ge.Kind {
	case gateway.KindCancelled:
		return cancelled(WebSearchName, errors.Unwrap(ge))
	case gateway.KindTransport:
		kind = KindTransport
	case gateway.KindStatus, gateway.KindMalformed:
		kind = KindBackend
	}
	return &Error{Kind: kind, Msg: "web_search: " + ge.Error(), Err: err}
}
