package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// SearchProvider is a web search service web_search can use instead of
// the gateway's POST /tools/web_search ([tools.web_search] provider).
type SearchProvider string

const (
	// ProviderSearxng is a SearXNG instance's JSON API:
	// GET {url}/search?q=…&format=json.
	ProviderSearxng SearchProvider = "searxng"
	// ProviderBrave is the Brave Search API: GET {url}?q=… with the
	// X-Subscription-Token header.
	ProviderBrave SearchProvider = "brave"
)

// maxBraveCount is the most results one Brave request returns.
const maxBraveCount = 20

// SearchOptions locate a search provider.
type SearchOptions struct {
	Provider SearchProvider
	// URL is the SearXNG instance's root (…/search is appended) or the
	// Brave endpoint (https://api.search.brave.com/res/v1/web/search).
	URL string
	// APIKey is Brave's subscription token (required), or a bearer token
	// for a SearXNG instance behind one (optional).
	APIKey secret.Secret
	// HTTPClient is used when non-nil; the gateway transport otherwise.
	// The URL is the operator's, so web_fetch's address rules do not
	// apply to it.
	HTTPClient *http.Client
}

// SearchBackend searches with a provider and answers in the gateway's
// search reply shape ({"query","results":[{"title","url","description",
// "age","site_name","extra_snippets"}]}), so web_search and the prompt see
// the same thing whichever backend searched. Timeout, reply cap, error
// kinds and messages are [Client.Search]'s. Safe for concurrent use.
type SearchBackend struct {
	c        *Client
	provider SearchProvider
	header   http.Header
}

// NewSearchBackend validates o and returns the backend.
func NewSearchBackend(o SearchOptions) (*SearchBackend, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, configError("web search URL must be an absolute http(s) URL without credentials, query or fragment, such as http://127.0.0.1:8888")
	}
	b := &SearchBackend{provider: o.Provider, c: &Client{base: strings.TrimRight(o.URL, "/"), key: o.APIKey, http: o.HTTPClient}}
	switch o.Provider {
	case ProviderSearxng:
		b.c.searchName = "SearXNG"
		if !o.APIKey.IsZero() {
			b.c.auth = "Bearer " + o.APIKey.Reveal()
		}
	case ProviderBrave:
		b.c.searchName = "the Brave Search API"
		if o.APIKey.IsZero() {
			return nil, configError("the Brave Search API needs its subscription token: set [tools.web_search].api_key")
		}
		b.header = http.Header{"X-Subscription-Token": {o.APIKey.Reveal()}}
	default:
		return nil, configError(fmt.Sprintf("web search provider %q is not known: use %q or %q", o.Provider, ProviderSearxng, ProviderBrave))
	}
	if !o.APIKey.IsZero() {
		if err := validateKey(o.APIKey.Reveal()); err != nil {
			return nil, configError("the web search key cannot be sent in a header (" + err.Error() + "): check [tools.web_search].api_key")
		}
	}
	if b.c.http == nil {
		b.c.http = &http.Client{Transport: NewTransport()}
	}
	if b.header != nil && b.c.http.CheckRedirect == nil {
		// net/http strips Authorization on a redirect to another host but
		// copies every other header, the Brave token included: a redirect
		// off the provider's host must not carry the operator's key.
		hc := *b.c.http
		hc.CheckRedirect = dropOffHost(b.header)
		b.c.http = &hc
	}
	return b, nil
}

// dropOffHost is a redirect policy that removes the provider's own
// headers from a request redirected to a host other than the first one,
// and keeps net/http's limit of 10 redirects.
func dropOffHost(header http.Header) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if req.URL.Host != via[0].URL.Host {
			for name := range header {
				req.Header.Del(name)
			}
		}
		return nil
	}
}

// BaseURL is where the backend searches (never its key).
func (b *SearchBackend) BaseURL() string { return b.c.base }

// CloseIdleConnections releases the backend's idle connections.
func (b *SearchBackend) CloseIdleConnections() { b.c.CloseIdleConnections() }

// SearchQuery is the body of a search (gateway-picker-webfetch §1.7):
// the web_search tool encodes its validated arguments as one, absent and
// blank optional fields left out, and a [SearchBackend] decodes it into
// its provider's parameters.
type SearchQuery struct {
	Query          string   `json:"query"`
	Count          uint64   `json:"count,omitempty"`
	Freshness      string   `json:"freshness,omitempty"`
	Country        string   `json:"country,omitempty"`
	SearchLang     string   `json:"search_lang,omitempty"`
	Safesearch     string   `json:"safesearch,omitempty"`
	IncludeDomains []string `json:"include_domains,omitempty"`
	ExcludeDomains []string `json:"exclude_domains,omitempty"`
}

// searchHit is one result in the gateway's reply shape.
type searchHit struct {
	Title         string   `json:"title"`
	URL           string   `json:"url"`
	Description   string   `json:"description"`
	Age           string   `json:"age,omitempty"`
	SiteName      string   `json:"site_name,omitempty"`
	ExtraSnippets []string `json:"extra_snippets,omitempty"`
}

// Search runs one search: query is the web_search arguments as a JSON
// object (see [Client.Search]). Arguments a provider has no parameter
// for are applied to its results: count cuts the list (SearXNG), and
// include_domains and exclude_domains filter by host, a domain matching
// itself and its subdomains (both providers, which have no such filter).
func (b *SearchBackend) Search(ctx context.Context, query json.RawMessage) (json.RawMessage, error) {
	var a SearchQuery
	if err := json.Unmarshal(query, &a); err != nil || strings.TrimSpace(a.Query) == "" {
		return nil, &Error{Kind: KindConfig, Op: b.op(), msg: "the search arguments are not an object with a query"}
	}
	path := b.request(a)
	status, data, herr := b.c.send(ctx, exchange{
		method: "GET", path: path, op: b.op(), timeout: SearchTimeout, header: b.header,
		replyLimit: MaxSearchReplyBytes, errorLimit: MaxSearchReplyBytes + 1, errorReadFails: true,
	})
	if herr != nil {
		return nil, b.c.searchError(herr)
	}
	if status < 200 || status > 299 {
		return nil, &Error{Kind: KindStatus, Op: b.op(), Status: status, body: escapeBody(data),
			msg: fmt.Sprintf("backend returned %d%s: %s", status, b.advice(status), b.c.searchBody(data))}
	}
	hits, problem := b.parse(data)
	if problem != "" {
		return nil, &Error{Kind: KindMalformed, Op: b.op(), Status: status, msg: "backend reply is malformed: " + problem}
	}
	hits = filterHits(hits, a)
	if a.Count > 0 && uint64(len(hits)) > a.Count {
		hits = hits[:a.Count]
	}
	if hits == nil {
		hits = []searchHit{}
	}
	out, err := jsonwire.Marshal(struct {
		Query   string      `json:"query"`
		Results []searchHit `json:"results"`
	}{strings.TrimSpace(a.Query), hits})
	if err != nil {
		return nil, &Error{Kind: KindMalformed, Op: b.op(), Status: status, msg: "backend reply cannot be re-encoded: " + err.Error()}
	}
	return json.RawMessage(strings.TrimRight(string(out), "\n")), nil
}

func (b *SearchBackend) op() string {
	if b.provider == ProviderBrave {
		return "GET brave web/search"
	}
	return "GET searxng /search"
}

// request is the path and query of one search.
func (b *SearchBackend) request(a SearchQuery) string {
	v := url.Values{}
	v.Set("q", strings.TrimSpace(a.Query))
	if b.provider == ProviderBrave {
		if a.Count > 0 {
			v.Set("count", strconv.FormatUint(min(a.Count, maxBraveCount), 10))
		}
		for k, s := range map[string]string{"freshness": a.Freshness, "country": a.Country, "search_lang": a.SearchLang, "safesearch": a.Safesearch} {
			if s != "" {
				v.Set(k, s)
			}
		}
		// Only web results: the other sections (news, videos, …) are
		// not in the reply shape and would only eat into the size cap.
		v.Set("result_filter", "web")
		v.Set("extra_snippets", "true")
		return "?" + v.Encode()
	}
	v.Set("format", "json")
	if r, ok := map[string]string{"pd": "day", "pw": "week", "pm": "month", "py": "year"}[a.Freshness]; ok {
		v.Set("time_range", r)
	}
	if s, ok := map[string]string{"off": "0", "moderate": "1", "strict": "2"}[a.Safesearch]; ok {
		v.Set("safesearch", s)
	}
	if a.SearchLang != "" {
		lang := a.SearchLang
		if a.Country != "" {
			lang += "-" + strings.ToUpper(a.Country)
		}
		v.Set("language", lang)
	}
	return "/search?" + v.Encode()
}

// advice says what a provider's error status usually means.
func (b *SearchBackend) advice(status int) string {
	switch {
	case b.provider == ProviderSearxng && status == http.StatusForbidden:
		return " (SearXNG refuses the JSON format unless settings.yml lists json under search.formats)"
	case b.provider == ProviderSearxng && status == http.StatusTooManyRequests:
		return " (SearXNG's limiter refused the request; disable server.limiter for a private instance)"
	case b.provider == ProviderBrave && (status == http.StatusUnauthorized || status == http.StatusForbidden):
		return " (check [tools.web_search].api_key, the Brave subscription token)"
	case b.provider == ProviderBrave && status == http.StatusTooManyRequests:
		return " (the Brave plan's rate or quota is exhausted; try again later)"
	}
	return ""
}

// parse maps a provider's reply to hits; entries without a url are
// dropped (SearXNG and Brave always send one; nothing else could be
// cited).
func (b *SearchBackend) parse(data []byte) ([]searchHit, string) {
	var hits []searchHit
	keep := func(h searchHit) {
		if strings.TrimSpace(h.URL) != "" {
			hits = append(hits, h)
		}
	}
	if b.provider == ProviderBrave {
		var reply struct {
			Web *struct {
				Results []struct {
					Title         string   `json:"title"`
					URL           string   `json:"url"`
					Description   string   `json:"description"`
					Age           string   `json:"age"`
					ExtraSnippets []string `json:"extra_snippets"`
					Profile       struct {
						Name string `json:"name"`
					} `json:"profile"`
				} `json:"results"`
			} `json:"web"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(data, &reply); err != nil {
			return nil, "not a Brave web search reply (JSON object)"
		}
		if reply.Web == nil {
			if reply.Type != "search" {
				return nil, "not a Brave web search reply (no type \"search\")"
			}
			return nil, "" // no web results
		}
		for _, r := range reply.Web.Results {
			keep(searchHit{Title: r.Title, URL: r.URL, Description: r.Description, Age: r.Age, SiteName: r.Profile.Name, ExtraSnippets: r.ExtraSnippets})
		}
		return hits, ""
	}
	var reply struct {
		Results *[]struct {
			Title         string  `json:"title"`
			URL           string  `json:"url"`
			Content       string  `json:"content"`
			PublishedDate *string `json:"publishedDate"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return nil, "not a SearXNG JSON reply (is format=json enabled?)"
	}
	if reply.Results == nil {
		return nil, "no results array"
	}
	for _, r := range *reply.Results {
		h := searchHit{Title: r.Title, URL: r.URL, Description: r.Content}
		if r.PublishedDate != nil {
			h.Age = *r.PublishedDate
		}
		keep(h)
	}
	return hits, ""
}

// filterHits applies include_domains and exclude_domains by host.
func filterHits(hits []searchHit, a SearchQuery) []searchHit {
	if len(a.IncludeDomains) == 0 && len(a.ExcludeDomains) == 0 {
		return hits
	}
	out := hits[:0]
	for _, h := range hits {
		u, err := url.Parse(h.URL)
		if err != nil {
			continue
		}
		host := strings.ToLower(u.Hostname())
		if len(a.IncludeDomains) > 0 && !underAny(host, a.IncludeDomains) {
			continue
		}
		if underAny(host, a.ExcludeDomains) {
			continue
		}
		out = append(out, h)
	}
	return out
}

// underAny reports whether host is one of domains or a subdomain of one.
func underAny(host string, domains []string) bool {
	for _, d := range domains {
		d = strings.ToLower(strings.TrimSuffix(d, "."))
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}
