package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// newSearch builds web_search over a real gateway client of gw.
func newSearch(t *testing.T, gw *gatewaytest.Server) *WebSearch {
	t.Helper()
	return searchWithKey(t, gw, gw.APIKey())
}

func searchWithKey(t *testing.T, gw *gatewaytest.Server, key string) *WebSearch {
	t.Helper()
	c, err := gateway.New(gateway.Options{BaseURL: gw.URL(), APIKey: secret.MustNew(key)})
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	s, err := NewWebSearch(c)
	if err != nil {
		t.Fatalf("NewWebSearch: %v", err)
	}
	return s
}

func searchErr(t *testing.T, s *WebSearch, raw string) *Error {
	t.Helper()
	res, err := s.Call(context.Background(), json.RawMessage(raw))
	if err == nil {
		t.Fatalf("Call(%s) = %q; want an error", raw, res.Text)
	}
	var te *Error
	if !errors.As(err, &te) {
		t.Fatalf("Call(%s) error %T %v; want *Error", raw, err, err)
	}
	return te
}

func TestWebSearchDescriptor(t *testing.T) {
	s := newSearch(t, gatewaytest.New(t))
	d := s.Descriptor()
	if d.ID.String() != "promptforge/web_search" || d.WireName != "web_search" {
		t.Errorf("identity %v wire %q", d.ID, d.WireName)
	}
	if d.Description != "Search the web and return a list of results (title, url, description)." {
		t.Errorf("description %q", d.Description)
	}
	var schema struct {
		AdditionalProperties *bool `json:"additionalProperties"`
		Required             []string
		Properties           map[string]map[string]any
	}
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Error("schema is not closed (additionalProperties must be false)")
	}
	if !reflect.DeepEqual(schema.Required, []string{"query"}) {
		t.Errorf("required %v", schema.Required)
	}
	want := []string{"count", "country", "exclude_domains", "freshness", "include_domains", "query", "safesearch", "search_lang"}
	var got []string
	for k := range schema.Properties {
		got = append(got, k)
	}
	if len(got) != len(want) {
		t.Errorf("properties %v; want %v", got, want)
	}
	if schema.Properties["query"]["maxLength"] != float64(400) || schema.Properties["count"]["maximum"] != float64(20) {
		t.Errorf("query/count bounds: %v %v", schema.Properties["query"], schema.Properties["count"])
	}
}

func TestWebSearchConstructor(t *testing.T) {
	if _, err := NewWebSearch(nil); err == nil || !strings.Contains(err.Error(), "PROMPTFORGE_GATEWAY_URL") {
		t.Errorf("NewWebSearch(nil) = %v; want an error saying what to configure", err)
	}
	// The gateway URL and key rules are gateway.New's (tested there).
	c, err := gateway.New(gateway.Options{BaseURL: "http://gw:8081/v1/", APIKey: secret.MustNew("very-secret-key")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewWebSearch(c)
	if err != nil {
		t.Fatal(err)
	}
	if s.String() != "web_search(http://gw:8081/v1)" {
		t.Errorf("String %q", s.String())
	}
	var logs logBuffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("tool", "t", s)
	for _, shown := range []string{s.String(), fmt.Sprintf("%v %+v", s, s), logs.String()} {
		if strings.Contains(shown, "very-secret-key") {
			t.Errorf("key shown in %q", shown)
		}
	}
}

func TestWebSearchHappyPath(t *testing.T) {
	gw := gatewaytest.New(t)
	s := newSearch(t, gw)
	hits := []gatewaytest.SearchHit{
		{Title: "Rivers", URL: "https://rivers.example/north", Description: "Frozen roads"},
		{Title: "Ice", URL: "https://ice.example/", Description: "Breakup season"},
	}
	gw.EnqueueSearch(gatewaytest.Search(hits...))
	res, err := s.Call(context.Background(), json.RawMessage(`{
		"query": "northern rivers", "count": 5, "freshness": "pw", "country": "us", "search_lang": "en",
		"safesearch": "strict", "include_domains": ["rivers.example"], "exclude_domains": ["spam.example"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Trusted {
		t.Error("web_search output must be untrusted")
	}
	var body struct {
		Query   string                  `json:"query"`
		Results []gatewaytest.SearchHit `json:"results"`
	}
	if err := json.Unmarshal([]byte(res.Text), &body); err != nil {
		t.Fatalf("result is not the raw JSON body: %v\n%s", err, res.Text)
	}
	if body.Query != "northern rivers" || !reflect.DeepEqual(body.Results, hits) {
		t.Errorf("result %+v", body)
	}

	reqs := gw.SearchRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d search requests", len(reqs))
	}
	if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer "+gw.APIKey() {
		t.Errorf("Authorization %q", auth)
	}
	want := map[string]any{
		"query": "northern rivers", "count": float64(5), "freshness": "pw", "country": "us", "search_lang": "en",
		"safesearch": "strict", "include_domains": []any{"rivers.example"}, "exclude_domains": []any{"spam.example"},
	}
	if !reflect.DeepEqual(reqs[0].Body, want) {
		t.Errorf("forwarded body %v\nwant %v", reqs[0].Body, want)
	}

	// Null and blank optional fields are left out.
	gw.EnqueueSearch(gatewaytest.Search())
	if _, err := s.Call(context.Background(), json.RawMessage(`{"query":"q","count":null,"freshness":"","country":" ","include_domains":null}`)); err != nil {
		t.Fatal(err)
	}
	if got := gw.SearchRequests()[1].Body; !reflect.DeepEqual(got, map[string]any{"query": "q"}) {
		t.Errorf("forwarded %v; want only the query", got)
	}
}

func TestWebSearchArgumentErrors(t *testing.T) {
	gw := gatewaytest.New(t)
	s := newSearch(t, gw)
	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf("d%d.example", i)
	}
	manyJSON, _ := json.Marshal(many)
	cases := map[string]string{
		`[]`:                     "web_search: arguments must be a JSON object with a query",
		`{}`:                     "web_search: query is required and must not be blank",
		`{"query":"   "}`:        "web_search: query is required and must not be blank",
		`{"query":7}`:            "web_search: query must be a string",
		`{"query":"q","page":2}`: `web_search: unknown argument "page"`,
		`{"query":"` + strings.Repeat("q", 401) + `"}`:                   "web_search: query must be at most 400 characters",
		`{"query":"q","count":0}`:                                        "web_search: count must be an integer from 1 to 20",
		`{"query":"q","count":21}`:                                       "web_search: count must be an integer from 1 to 20",
		`{"query":"q","count":2.5}`:                                      "web_search: count must be an integer from 1 to 20",
		`{"query":"q","count":"3"}`:                                      "web_search: count must be an integer from 1 to 20",
		`{"query":"q","freshness":"daily"}`:                              "web_search: freshness must be one of pd, pw, pm, py",
		`{"query":"q","freshness":"2024-01-01to2024-02-01"}`:             "web_search: freshness must be one of pd, pw, pm, py",
		`{"query":"q","safesearch":"medium"}`:                            "web_search: safesearch must be one of off, moderate, strict",
		`{"query":"q","search_lang":"` + strings.Repeat("e", 129) + `"}`: "web_search: search_lang must be at most 128 characters",
		`{"query":"q","country":5}`:                                      "web_search: country must be a string",
		`{"query":"q","include_domains":"a.example"}`:                    "web_search: include_domains must be an array of host names",
		`{"query":"q","include_domains":` + string(manyJSON) + `}`:       "web_search: include_domains may list at most 20 domains",
		`{"query":"q","exclude_domains":["a.example/path"]}`:             `web_search: exclude_domains entry "a.example/path" must be a bare host name`,
		`{"query":"q","exclude_domains":["a example"]}`:                  `web_search: exclude_domains entry "a example" must be a bare host name`,
		`{"query":"q","exclude_domains":["a\u0001b"]}`:                   `web_search: exclude_domains entry`,
		`{"query":"q","exclude_domains":[""]}`:                           `web_search: exclude_domains entry "" must be a bare host name`,
	}
	for raw, want := range cases {
		te := searchErr(t, s, raw)
		if te.Kind != KindInvalidArguments || !strings.HasPrefix(te.Msg, want) {
			t.Errorf("Call(%.60s): %v %q; want invalid arguments %q", raw, te.Kind, te.Msg, want)
		}
	}
	// 400 characters is the limit in characters, not bytes.
	gw.EnqueueSearch(gatewaytest.Search())
	if _, err := s.Call(context.Background(), args(t, map[string]any{"query": strings.Repeat("é", 400), "count": 20, "search_lang": strings.Repeat("e", 128)})); err != nil {
		t.Errorf("limits exactly: %v", err)
	}
	if n := len(gw.SearchRequests()); n != 1 {
		t.Errorf("%d requests reached the gateway; invalid arguments must not be sent", n)
	}
}

// The exchange's failures are tested in package gateway; here, that each
// class reaches the run as the tool's kind, under the tool's name, with
// the message web_search has always given.
func TestWebSearchBackendErrors(t *testing.T) {
	gw := gatewaytest.New(t)
	s := newSearch(t, gw)
	tests := []struct {
		reply gatewaytest.Reply
		kind  Kind
		want  string
	}{
		{gatewaytest.Status(500, "echo "+gw.APIKey()), KindBackend, "web_search: backend returned 500: echo [redacted]"},
		{gatewaytest.Status(503, ""), KindBackend, "web_search: backend returned 503: (empty body)"},
		{gatewaytest.JSON(map[string]any{"results": []any{map[string]any{"title": "t"}}}), KindBackend, "web_search: backend reply is malformed: result 0 has no url"},
	}
	for _, tc := range tests {
		gw.EnqueueSearch(tc.reply)
		te := searchErr(t, s, `{"query":"q"}`)
		if te.Kind != tc.kind || te.Msg != tc.want {
			t.Errorf("got %v %.200q; want %v %.200q", te.Kind, te.Msg, tc.kind, tc.want)
		}
	}

	// A wrong key is the gateway's 401, reported like any non-2xx.
	wrong := searchWithKey(t, gw, "wrong-key")
	if te := searchErr(t, wrong, `{"query":"q"}`); te.Kind != KindBackend || !strings.HasPrefix(te.Msg, "web_search: backend returned 401: ") {
		t.Errorf("wrong key: %v %q", te.Kind, te.Msg)
	}
}

func TestWebSearchTransportAndCancel(t *testing.T) {
	gw := gatewaytest.New(t)
	s := newSearch(t, gw)
	// (A search cancelled in flight is gateway's TestSearchTransportAndCancel.)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Call(ctx, json.RawMessage(`{"query":"q"}`))
	if KindOf(err) != KindCancelled || err.Error() != "web_search: cancelled by the caller" || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v (kind %v)", err, KindOf(err))
	}

	gw.Close()
	te := searchErr(t, s, `{"query":"q"}`)
	if te.Kind != KindTransport || !strings.HasPrefix(te.Msg, "web_search: cannot reach the gateway at "+gw.URL()) {
		t.Errorf("closed gateway: %v %q", te.Kind, te.Msg)
	}
}
