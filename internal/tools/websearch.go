package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/promptforge-go/promptforge/internal/redact"
)

// Identity and limits of web_search (spec prompt-language §6.2 and
// gateway-picker-webfetch §1.14(c)).
const (
	WebSearchName        = "web_search"
	WebSearchDescription = "Search the web and return a list of results (title, url, description)."

	webSearchTimeout   = 30 * time.Second
	webSearchBodyCap   = 256 << 10
	maxQueryChars      = 400
	maxSearchCount     = 20
	maxSearchLangChars = 128
	maxDomains         = 20
	maxErrorBodyChars  = 2000
)

// WebSearch is the web_search tool: a thin client of the gateway's
// POST {base}/tools/web_search. It validates the model's arguments
// against a closed schema, forwards them, checks the reply's shape, and
// hands the raw reply to the model as untrusted text. It is safe for
// concurrent use.
type WebSearch struct {
	base     string
	endpoint string
	key      string
	client   *http.Client
	desc     Descriptor
}

// NewWebSearch builds web_search against the gateway API root baseURL
// (including /v1, e.g. http://127.0.0.1:8081/v1) with bearer apiKey. A nil
// httpClient gets a private client; its own Timeout, if any, applies on
// top of the tool's 30 s.
func NewWebSearch(baseURL, apiKey string, httpClient *http.Client) (*WebSearch, error) {
	base, err := validateBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(apiKey) == "" || !httpguts.ValidHeaderFieldValue(apiKey) {
		return nil, errors.New("web_search: the gateway API key must be non-blank and contain no control characters; set [gateway].api_key or PROMPTFORGE_GATEWAY_API_KEY")
	}
	if httpClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		httpClient = &http.Client{Transport: t}
	}
	return &WebSearch{
		base:     base,
		endpoint: base + "/tools/web_search",
		key:      apiKey,
		client:   httpClient,
		desc: Descriptor{
			ID:          ID{Server: ServerName, Name: WebSearchName},
			WireName:    WebSearchName,
			Description: WebSearchDescription,
			Parameters:  webSearchSchema(),
		},
	}, nil
}

func validateBaseURL(raw string) (string, error) {
	trimmed := strings.TrimRight(strings.TrimSpace(raw), "/")
	u, err := url.Parse(trimmed)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("web_search: gateway URL %q must be an absolute http or https URL such as http://127.0.0.1:8081/v1", redact.RawURL(raw))
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("web_search: gateway URL %s must not contain userinfo, a query or a fragment", redact.URL(u))
	}
	return trimmed, nil
}

// Descriptor implements Tool.
func (s *WebSearch) Descriptor() Descriptor { return s.desc }

// String never shows the key.
func (s *WebSearch) String() string { return "web_search(" + s.base + ")" }

// LogValue never shows the key.
func (s *WebSearch) LogValue() slog.Value {
	return slog.GroupValue(slog.String("tool", WebSearchName), slog.String("gateway", s.base))
}

// CloseIdleConnections releases the client's kept-alive connections.
func (s *WebSearch) CloseIdleConnections() { s.client.CloseIdleConnections() }

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

// searchRequest is the body sent to the gateway: the validated arguments,
// with absent and blank optional fields left out.
type searchRequest struct {
	Query          string   `json:"query"`
	Count          uint64   `json:"count,omitempty"`
	Freshness      string   `json:"freshness,omitempty"`
	Country        string   `json:"country,omitempty"`
	SearchLang     string   `json:"search_lang,omitempty"`
	Safesearch     string   `json:"safesearch,omitempty"`
	IncludeDomains []string `json:"include_domains,omitempty"`
	ExcludeDomains []string `json:"exclude_domains,omitempty"`
}

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
		return Result{}, &Error{Kind: Other, Msg: "web_search: cannot encode the request", Err: err}
	}
	cctx, cancel := context.WithTimeout(ctx, webSearchTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(cctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return Result{}, &Error{Kind: Other, Msg: "web_search: cannot build the request", Err: err}
	}
	hreq.Header.Set("Authorization", "Bearer "+s.key)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")

	resp, err := s.client.Do(hreq)
	if err != nil {
		return Result{}, s.transportError(ctx, cctx, "cannot reach the gateway", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, webSearchBodyCap+1))
	if err != nil {
		return Result{}, s.transportError(ctx, cctx, "reading the gateway's reply failed", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{}, &Error{Kind: Backend, Msg: fmt.Sprintf("web_search: backend returned %d: %s", resp.StatusCode, s.sanitizeBody(data))}
	}
	if len(data) > webSearchBodyCap {
		return Result{}, &Error{Kind: Backend, Msg: fmt.Sprintf("web_search: backend reply exceeds the %d-byte cap", webSearchBodyCap)}
	}
	if problem := checkSearchReply(data); problem != "" {
		return Result{}, &Error{Kind: Backend, Msg: "web_search: backend reply is malformed: " + problem}
	}
	return Result{Text: string(data)}, nil
}

func (s *WebSearch) transportError(ctx, cctx context.Context, what string, err error) *Error {
	if ctx.Err() != nil {
		return cancelled(WebSearchName, ctx.Err())
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return &Error{Kind: Transport, Msg: fmt.Sprintf("web_search: the gateway at %s did not answer within %v; try again later", s.base, webSearchTimeout), Err: err}
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	return &Error{Kind: Transport, Msg: fmt.Sprintf("web_search: %s at %s: %v; check that the gateway is running", what, s.base, cause), Err: err}
}

// sanitizeBody renders an error body for a message: the key can never
// appear (a misbehaving backend might echo headers), control characters
// and runs of whitespace collapse, and it is capped.
func (s *WebSearch) sanitizeBody(b []byte) string {
	text := redact.Secret(string(b), s.key)
	text = redact.Text(text, maxErrorBodyChars)
	if text == "" {
		return "(empty body)"
	}
	return text
}

// checkSearchReply enforces the reply contract: a JSON object with a
// results array whose entries each carry a non-blank url.
func checkSearchReply(data []byte) string {
	var reply struct {
		Results *[]struct {
			URL *string `json:"url"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return "not a JSON object with a results array"
	}
	if reply.Results == nil {
		return "no results array"
	}
	for i, r := range *reply.Results {
		if r.URL == nil || strings.TrimSpace(*r.URL) == "" {
			return fmt.Sprintf("result %d has no url", i)
		}
	}
	return ""
}
