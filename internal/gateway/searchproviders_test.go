package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// scriptedProvider is a loopback SearXNG or Brave endpoint: it records
// each request and answers status and body.
type scriptedProvider struct {
	mu     sync.Mutex
	reqs   []*http.Request
	status int
	body   []byte
}

func (p *scriptedProvider) serve(t *testing.T) string {
	return newRawServer(t, func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.reqs = append(p.reqs, r.Clone(r.Context()))
		status, body := p.status, p.body
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}

func (p *scriptedProvider) last(t *testing.T) *http.Request {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.reqs) == 0 {
		t.Fatal("no request reached the provider")
	}
	return p.reqs[len(p.reqs)-1]
}

func recordedSearch(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/search/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type hit struct {
	Title         string   `json:"title"`
	URL           string   `json:"url"`
	Description   string   `json:"description"`
	Age           string   `json:"age"`
	SiteName      string   `json:"site_name"`
	ExtraSnippets []string `json:"extra_snippets"`
}

func decodeHits(t *testing.T, raw json.RawMessage) (string, []hit) {
	t.Helper()
	var r struct {
		Query   string `json:"query"`
		Results []hit  `json:"results"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("reply %s: %v", raw, err)
	}
	return r.Query, r.Results
}

func TestSearxngIsMappedToTheGatewayShape(t *testing.T) {
	p := &scriptedProvider{status: 200, body: recordedSearch(t, "searxng")}
	base := p.serve(t)
	b, err := gateway.NewSearchBackend(gateway.SearchOptions{Provider: gateway.ProviderSearxng, URL: base + "/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.CloseIdleConnections)
	reply, err := b.Search(t.Context(), json.RawMessage(`{"query":" herb sutter abi stability ","count":2,"freshness":"pm","safesearch":"strict","search_lang":"en","country":"gb"}`))
	if err != nil {
		t.Fatal(err)
	}
	q, hits := decodeHits(t, reply)
	want := []hit{
		{Title: "ABI stability and C++", URL: "https://herbsutter.com/2020/02/abi/", Description: "Trip report notes on the committee's ABI discussion.", Age: "2020-02-17T00:00:00"},
		{Title: "P1863R1: ABI - Now or Never", URL: "https://www.open-std.org/jtc1/sc22/wg21/docs/papers/2020/p1863r1.pdf", Description: "A paper asking the committee to decide on ABI breaks."},
	}
	if q != "herb sutter abi stability" || !reflect.DeepEqual(hits, want) {
		t.Errorf("query %q hits %+v", q, hits)
	}
	r := p.last(t)
	wantQ := url.Values{"q": {"herb sutter abi stability"}, "format": {"json"}, "time_range": {"month"}, "safesearch": {"2"}, "language": {"en-GB"}}
	if r.URL.Path != "/search" || !reflect.DeepEqual(r.URL.Query(), wantQ) || r.Method != "GET" {
		t.Errorf("request %s %s", r.Method, r.URL)
	}
	if r.Header.Get("Authorization") != "" {
		t.Error("an Authorization header was sent without a key")
	}
	if b.BaseURL() != base {
		t.Errorf("BaseURL %q", b.BaseURL())
	}
}

func TestSearxngDomainFiltersAndBearer(t *testing.T) {
	p := &scriptedProvider{status: 200, body: recordedSearch(t, "searxng")}
	b, err := gateway.NewSearchBackend(gateway.SearchOptions{Provider: gateway.ProviderSearxng, URL: p.serve(t), APIKey: secret.MustNew("sx-token")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.CloseIdleConnections)
	reply, err := b.Search(t.Context(), json.RawMessage(`{"query":"abi","include_domains":["open-std.org","ycombinator.com"],"exclude_domains":["news.ycombinator.com"]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, hits := decodeHits(t, reply)
	if len(hits) != 1 || hits[0].URL != "https://www.open-std.org/jtc1/sc22/wg21/docs/papers/2020/p1863r1.pdf" {
		t.Errorf("hits %+v", hits)
	}
	if got := p.last(t).Header.Get("Authorization"); got != "Bearer sx-token" {
		t.Errorf("Authorization %q", got)
	}
}

func TestBraveIsMappedToTheGatewayShape(t *testing.T) {
	p := &scriptedProvider{status: 200, body: recordedSearch(t, "brave")}
	base := p.serve(t) + "/res/v1/web/search"
	b, err := gateway.NewSearchBackend(gateway.SearchOptions{Provider: gateway.ProviderBrave, URL: base, APIKey: secret.MustNew("brave-token")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.CloseIdleConnections)
	reply, err := b.Search(t.Context(), json.RawMessage(`{"query":"herb sutter abi stability","count":50,"freshness":"py","country":"us","search_lang":"en","safesearch":"moderate"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, hits := decodeHits(t, reply)
	if len(hits) != 3 {
		t.Fatalf("hits %+v", hits)
	}
	first := hit{Title: "ABI stability and C++", URL: "https://herbsutter.com/2020/02/abi/", Description: "Trip report notes on the committee's <strong>ABI</strong> discussion.",
		Age: "February 17, 2020", SiteName: "Sutter's Mill", ExtraSnippets: []string{"The committee polled on breaking ABI.", "Sutter argued for stability."}}
	if !reflect.DeepEqual(hits[0], first) || hits[1].Age != "" || hits[1].SiteName != "Open-std" {
		t.Errorf("hits %+v", hits)
	}
	if strings.Contains(string(reply), `\u003c`) {
		t.Error("markup was HTML-escaped; the text must reach the prompt as the provider sent it")
	}
	r := p.last(t)
	wantQ := url.Values{"q": {"herb sutter abi stability"}, "count": {"20"}, "freshness": {"py"}, "country": {"us"}, "search_lang": {"en"},
		"safesearch": {"moderate"}, "result_filter": {"web"}, "extra_snippets": {"true"}}
	if r.URL.Path != "/res/v1/web/search" || !reflect.DeepEqual(r.URL.Query(), wantQ) {
		t.Errorf("request %s", r.URL)
	}
	if r.Header.Get("X-Subscription-Token") != "brave-token" || r.Header.Get("Authorization") != "" {
		t.Errorf("headers %v", r.Header)
	}
}

func TestSearchProviderErrors(t *testing.T) {
	tests := []struct {
		name     string
		provider gateway.SearchProvider
		status   int
		body     string
		kind     gateway.Kind
		want     string
	}{
		{"searxng json off", gateway.ProviderSearxng, 403, "Forbidden", gateway.KindStatus, "backend returned 403 (SearXNG refuses the JSON format unless settings.yml lists json under search.formats): Forbidden"},
		{"searxng html", gateway.ProviderSearxng, 200, "<!DOCTYPE html>", gateway.KindMalformed, "not a SearXNG JSON reply"},
		{"searxng no results", gateway.ProviderSearxng, 200, `{"query":"q"}`, gateway.KindMalformed, "no results array"},
		{"brave bad token", gateway.ProviderBrave, 401, `{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid.","status":401}}`,
			gateway.KindStatus, "backend returned 401 (check [tools.web_search].api_key, the Brave subscription token): "},
		{"brave quota", gateway.ProviderBrave, 429, `{"type":"ErrorResponse","error":{"code":"RATE_LIMITED","status":429}}`, gateway.KindStatus, "the Brave plan's rate or quota is exhausted"},
		{"brave not search", gateway.ProviderBrave, 200, `{"type":"locations"}`, gateway.KindMalformed, `no type "search"`},
		{"oversize", gateway.ProviderSearxng, 200, `{"results":[` + strings.Repeat(`{"url":"https://x.example/","content":"`+strings.Repeat("d", 1000)+`"},`, 300) + `{"url":"https://y/"}]}`,
			gateway.KindMalformed, "backend reply exceeds the 262144-byte cap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &scriptedProvider{status: tc.status, body: []byte(tc.body)}
			b, err := gateway.NewSearchBackend(gateway.SearchOptions{Provider: tc.provider, URL: p.serve(t), APIKey: secret.MustNew("the-key-123")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.CloseIdleConnections)
			_, err = b.Search(t.Context(), json.RawMessage(`{"query":"q"}`))
			if err == nil {
				t.Fatal("no error")
			}
			asError(t, err, tc.kind)
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "the-key-123") {
				t.Errorf("error %q, want it to contain %q and never the key", err, tc.want)
			}
		})
	}
}

func TestSearchProviderUnreachableAndConfig(t *testing.T) {
	b, err := gateway.NewSearchBackend(gateway.SearchOptions{Provider: gateway.ProviderSearxng, URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Search(t.Context(), json.RawMessage(`{"query":"q"}`))
	if asError(t, err, gateway.KindTransport); !strings.Contains(err.Error(), "cannot reach SearXNG at http://127.0.0.1:1") {
		t.Errorf("error %v", err)
	}
	for _, o := range []gateway.SearchOptions{
		{Provider: gateway.ProviderBrave, URL: "https://api.search.brave.com/res/v1/web/search"},
		{Provider: "bing", URL: "https://x"},
		{Provider: gateway.ProviderSearxng, URL: "http://u:p@x"},
		{Provider: gateway.ProviderSearxng, URL: "x"},
	} {
		if _, err := gateway.NewSearchBackend(o); err == nil {
			t.Errorf("%+v accepted", o.Provider)
		}
	}
}

func TestSearchProviderTimeoutOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		silentServer(func(hc *http.Client) {
			b, err := gateway.NewSearchBackend(gateway.SearchOptions{Provider: gateway.ProviderSearxng, URL: "http://searx.test", HTTPClient: hc})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = b.Search(t.Context(), json.RawMessage(`{"query":"q"}`))
			if got := time.Since(start); got != gateway.SearchTimeout {
				t.Errorf("gave up after %v, want %v", got, gateway.SearchTimeout)
			}
			if ge := asError(t, err, gateway.KindTransport); !ge.Timeout() || !strings.Contains(err.Error(), "SearXNG at http://searx.test did not answer within 30s") {
				t.Errorf("error %v", err)
			}
		})
	})
}

// A redirect off the provider's host does not carry the Brave key:
// net/http copies custom headers on a redirect, whatever the host.
func TestBraveKeyStaysOnTheProvidersHost(t *testing.T) {
	got := make(chan string, 1)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("X-Subscription-Token")
		w.Header().Set("Content-Type", "application/json")
		w.Write(recordedSearch(t, "brave"))
	}))
	t.Cleanup(elsewhere.Close)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/search?"+r.URL.RawQuery, http.StatusFound)
	}))
	t.Cleanup(provider.Close)
	b, err := gateway.NewSearchBackend(gateway.SearchOptions{Provider: gateway.ProviderBrave, URL: provider.URL + "/res/v1/web/search",
		APIKey: secret.MustNew("brave-token"), HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Search(t.Context(), json.RawMessage(`{"query":"q"}`)); err != nil {
		t.Fatal(err)
	}
	if token := <-got; token != "" {
		t.Errorf("the redirected request carried X-Subscription-Token %q to another host", token)
	}
}
