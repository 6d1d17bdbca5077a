package tools

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
)

// site serves handler as "site.test" (reached through testNet's public
// route) and returns a fetcher plus the base URL.
func site(t *testing.T, h http.HandlerFunc, change func(*Policy)) (*WebFetch, *fetchEnv, string) {
	t.Helper()
	srv := newServer(t, h)
	env := newEnv()
	env.res.set("site.test", []string{publicIP})
	p := testPolicy(srv.port())
	if change != nil {
		change(&p)
	}
	return env.fetcher(t, p), env, fmt.Sprintf("http://site.test:%d", srv.port())
}

const articleHTML = `<!doctype html>
<html><head><title>Rivers of the North</title><style>body{color:red}</style></head>
<body>
<header><nav><a href="/">Home</a> <a href="/about">NAVIGATION-MENU-TEXT</a></nav></header>
<main>
<article>
<h1>Rivers of the North</h1>
<p>The northern rivers freeze early in the season, and the people who live along their banks have learned to read the ice. ARTICLE-PARAGRAPH-ONE describes how the first thin sheets form at the edges of slow water.</p>
<p>By midwinter the channels are solid enough to carry sledges, and the rivers become roads. ARTICLE-PARAGRAPH-TWO follows a trader who travels three hundred kilometres on the frozen surface each year.</p>
<p>Spring breakup is the most dangerous time: the ice groans, splits and piles into ridges taller than a house. ARTICLE-PARAGRAPH-THREE explains how villages watch the gauges and move their boats to higher ground.</p>
</article>
</main>
<aside>SIDEBAR-ADVERT-TEXT buy now</aside>
<footer>FOOTER-COPYRIGHT-TEXT 2024</footer>
<script>var TRACKING_SCRIPT = 1;</script>
</body></html>`

func TestSuccessOutput(t *testing.T) {
	w, _, base := site(t, contentType("text/html; charset=utf-8", articleHTML), nil)
	text := fetchOK(t, w, map[string]any{"url": base + "/rivers?id=7&lang=en#comments"})
	u, truncated, extraction, body := header(t, text)
	if u != base+"/rivers?id=7&lang=en" {
		t.Errorf("url line = %q; want the final URL with its query and no fragment", u)
	}
	if truncated || extraction != "readability" {
		t.Errorf("truncated %v extraction %q; want false readability", truncated, extraction)
	}
	if !strings.HasPrefix(text, "url: "+u+"\ntruncated: false\nextraction: readability\n\n") {
		t.Errorf("header layout:\n%s", text)
	}
	for _, want := range []string{"ARTICLE-PARAGRAPH-ONE", "ARTICLE-PARAGRAPH-TWO", "ARTICLE-PARAGRAPH-THREE"} {
		if !strings.Contains(body, want) {
			t.Errorf("article text %s missing from:\n%s", want, body)
		}
	}
	for _, gone := range []string{"NAVIGATION-MENU-TEXT", "FOOTER-COPYRIGHT-TEXT", "SIDEBAR-ADVERT-TEXT", "TRACKING_SCRIPT", "color:red"} {
		if strings.Contains(body, gone) {
			t.Errorf("boilerplate %s kept in:\n%s", gone, body)
		}
	}
}

func TestHTMLFallbackAndRaw(t *testing.T) {
	const short = `<html><body><div><span>Tiny page SHORT-PAGE-TEXT</span></div></body></html>`
	table := `<html><body><h1>Prices</h1><table><tr><th>Item</th><th>Cost</th></tr>
<tr><td>CELL-APPLE</td><td>CELL-ONE-EURO</td></tr><tr><td>CELL-PEAR</td><td>CELL-TWO-EURO</td></tr></table>` +
		`<p>` + strings.Repeat("Filler prose about fruit markets and their prices. ", 20) + `</p></body></html>`
	w, _, base := site(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/short":
			_, _ = rw.Write([]byte(short))
		case "/table":
			_, _ = rw.Write([]byte(table))
		default:
			_, _ = rw.Write([]byte(articleHTML))
		}
	}, nil)

	_, _, extraction, body := header(t, fetchOK(t, w, map[string]any{"url": base + "/short"}))
	if extraction != "raw-html" || !strings.Contains(body, "SHORT-PAGE-TEXT") {
		t.Errorf("short page: extraction %q body %q; want raw-html with the page text", extraction, body)
	}

	_, _, extraction, body = header(t, fetchOK(t, w, map[string]any{"url": base + "/table", "raw": true}))
	if extraction != "raw-html" {
		t.Errorf("raw: extraction %q", extraction)
	}
	for _, cell := range []string{"CELL-APPLE", "CELL-ONE-EURO", "CELL-PEAR", "CELL-TWO-EURO"} {
		if !strings.Contains(body, cell) {
			t.Errorf("raw output lost table cell %s:\n%s", cell, body)
		}
	}
	if !strings.Contains(body, "|") {
		t.Errorf("raw output has no markdown table:\n%s", body)
	}

	// raw keeps the whole page, navigation included.
	_, _, extraction, body = header(t, fetchOK(t, w, map[string]any{"url": base + "/article", "raw": true}))
	if extraction != "raw-html" || !strings.Contains(body, "NAVIGATION-MENU-TEXT") || !strings.Contains(body, "ARTICLE-PARAGRAPH-TWO") {
		t.Errorf("raw article: extraction %q body:\n%s", extraction, body)
	}
	if strings.Contains(body, "TRACKING_SCRIPT") {
		t.Errorf("raw output kept a script:\n%s", body)
	}
}

func TestContentTypeRouting(t *testing.T) {
	const doc = `{"b": [1, 2], "a": "x"}`
	w, _, base := site(t, func(rw http.ResponseWriter, r *http.Request) {
		ct := r.URL.Query().Get("ct")
		if ct == "none" {
			rw.Header()["Content-Type"] = nil
		} else {
			rw.Header().Set("Content-Type", ct)
		}
		_, _ = rw.Write([]byte(doc))
	}, nil)
	plain := []string{
		"application/json", "application/json; charset=utf-8", "application/ld+json", "application/problem+json",
		"application/xml", "application/atom+xml", "text/xml", "text/plain", "text/csv", "text/markdown", "text/vnd.custom+json",
	}
	for _, ct := range plain {
		text := fetchOK(t, w, map[string]any{"url": base + "/doc?ct=" + url.QueryEscape(ct)})
		_, truncated, extraction, body := header(t, text)
		if extraction != "plain" || truncated || body != doc {
			t.Errorf("%s: extraction %q truncated %v body %q; want the body verbatim as plain", ct, extraction, truncated, body)
		}
	}
	refused := []string{"application/pdf", "application/octet-stream", "image/png", "audio/mpeg", "video/mp4", "application/zip", "nonsense"}
	for _, ct := range refused {
		got := fetchOK(t, w, map[string]any{"url": base + "/doc?ct=" + url.QueryEscape(ct)})
		want := fmt.Sprintf("content type %s from %s/doc cannot be returned as text", ct, base)
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q; want prefix %q", ct, got, want)
		}
	}
	got := fetchOK(t, w, map[string]any{"url": base + "/doc?ct=none"})
	if !strings.HasPrefix(got, "response from "+base+"/doc has no content type") {
		t.Errorf("absent content type: %q", got)
	}
}

func TestSizeCaps(t *testing.T) {
	const limit = 64 << 10
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write(make([]byte, 16<<20))
	_ = zw.Close()
	if bomb.Len() >= limit {
		t.Fatalf("the gzip bomb is %d bytes compressed; it must fit under the cap to prove decompressed counting", bomb.Len())
	}

	w, _, base := site(t, func(rw http.ResponseWriter, r *http.Request) {
		h := rw.Header()
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		switch r.URL.Path {
		case "/html-streamed":
			h.Set("Content-Type", "text/html")
			rw.(http.Flusher).Flush() // chunked: no Content-Length to go by
			_, _ = rw.Write([]byte("<html><body><p>" + strings.Repeat("x", n) + "</p></body></html>"))
		case "/declared":
			h.Set("Content-Type", "text/html")
			h.Set("Content-Length", strconv.Itoa(limit+1))
			rw.WriteHeader(http.StatusOK)
			_, _ = rw.Write([]byte("<html>"))
			rw.(http.Flusher).Flush()
			// Never send the rest: reading it would hang until the
			// total timeout, so only a refusal before reading passes.
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "/bomb":
			h.Set("Content-Type", "text/html")
			h.Set("Content-Encoding", "gzip")
			_, _ = rw.Write(bomb.Bytes())
		case "/json":
			h.Set("Content-Type", "application/json")
			_, _ = rw.Write([]byte(`"` + strings.Repeat("j", n-2) + `"`))
		case "/text":
			h.Set("Content-Type", "text/plain")
			// n bytes of "é" (2 bytes each) plus a final byte if odd.
			body := strings.Repeat("é", n/2) + strings.Repeat("z", n%2)
			_, _ = rw.Write([]byte(body))
		case "/br":
			h.Set("Content-Type", "text/plain")
			h.Set("Content-Encoding", "br")
			bw := brotli.NewWriter(rw)
			_, _ = bw.Write([]byte("brotli-decoded-text"))
			_ = bw.Close()
		}
	}, func(p *Policy) { p.MaxBytes = limit; p.MaxChars = 1_000_000 })

	tooLarge := fmt.Sprintf("exceeds the %d-byte size cap", limit)
	const wrap = len("<html><body><p></p></body></html>")
	for _, tc := range []struct {
		path string
		want string // "" = success untruncated
	}{
		{fmt.Sprintf("/html-streamed?n=%d", limit-wrap+1), tooLarge},
		{fmt.Sprintf("/html-streamed?n=%d", limit-wrap), ""},
		{fmt.Sprintf("/html-streamed?n=%d", limit-wrap-1), ""},
		{"/declared", tooLarge},
		{"/bomb", tooLarge},
		{fmt.Sprintf("/json?n=%d", limit+1), tooLarge},
		{fmt.Sprintf("/json?n=%d", limit), ""},
		{fmt.Sprintf("/json?n=%d", limit-1), ""},
		{fmt.Sprintf("/text?n=%d", limit), ""},
	} {
		got := fetchOK(t, w, map[string]any{"url": base + tc.path})
		if tc.want != "" {
			if !strings.HasPrefix(got, "response from ") || !strings.Contains(got, tc.want) {
				t.Errorf("%s: %q; want %q", tc.path, truncate(got), tc.want)
			}
			continue
		}
		if _, truncated, _, _ := header(t, got); truncated {
			t.Errorf("%s: truncated; a body at or under the cap is whole", tc.path)
		}
	}

	// Flat text over the cap keeps a prefix, flagged; the cut never
	// splits a character.
	got := fetchOK(t, w, map[string]any{"url": fmt.Sprintf("%s/text?n=%d", base, limit+3)})
	_, truncated, extraction, body := header(t, got)
	if !truncated || extraction != "plain" || !utf8.ValidString(body) || strings.ContainsRune(body, utf8.RuneError) {
		t.Errorf("over-cap text: truncated %v extraction %q valid %v", truncated, extraction, utf8.ValidString(body))
	}
	if len(body) != limit {
		t.Errorf("over-cap text kept %d bytes; want the %d-byte prefix", len(body), limit)
	}

	_, _, _, body = header(t, fetchOK(t, w, map[string]any{"url": base + "/br"}))
	if body != "brotli-decoded-text" {
		t.Errorf("brotli body = %q", body)
	}
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func TestCharCap(t *testing.T) {
	const text = "añb😀c" + "dddd"
	w, _, base := site(t, contentType("text/plain; charset=utf-8", text), func(p *Policy) { p.MaxChars = 6 })
	for _, tc := range []struct {
		max       any
		want      string
		truncated bool
	}{
		{1, "a", true},
		{3, "añb", true},
		{4, "añb😀", true},
		{nil, "añb😀cd", true},  // the ceiling
		{1000, "añb😀cd", true}, // clamped to the ceiling
		{6, "añb😀cd", true},
	} {
		a := map[string]any{"url": base + "/t"}
		if tc.max != nil {
			a["max_chars"] = tc.max
		}
		_, truncated, _, body := header(t, fetchOK(t, w, a))
		if body != tc.want || truncated != tc.truncated {
			t.Errorf("max_chars %v: body %q truncated %v; want %q %v", tc.max, body, truncated, tc.want, tc.truncated)
		}
	}
	w2, _, base2 := site(t, contentType("text/plain", "short"), nil)
	if _, truncated, _, body := header(t, fetchOK(t, w2, map[string]any{"url": base2 + "/", "max_chars": 5})); truncated || body != "short" {
		t.Errorf("exactly max_chars: %q truncated %v", body, truncated)
	}
}

func TestCharsets(t *testing.T) {
	w, _, base := site(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", r.URL.Query().Get("ct"))
		switch r.URL.Path {
		case "/latin1":
			_, _ = rw.Write([]byte("caf\xe9 cr\xe8me \xa9"))
		case "/cp1252":
			_, _ = rw.Write([]byte("\x93quoted\x94 \x80"))
		default:
			_, _ = rw.Write([]byte("ok \xff bytes"))
		}
	}, nil)
	for _, tc := range []struct {
		path, ct, want string
	}{
		{"/latin1", "text/plain; charset=ISO-8859-1", "café crème ©"},
		{"/latin1", "text/plain; charset=\"latin1\"", "café crème ©"},
		{"/cp1252", "text/plain; charset=windows-1252", "\u201cquoted\u201d €"},
		{"/bad", "text/plain", "ok \uFFFD bytes"},
		{"/bad", "text/plain; charset=UTF-8", "ok \uFFFD bytes"},
	} {
		_, _, _, body := header(t, fetchOK(t, w, map[string]any{"url": base + tc.path + "?ct=" + url.QueryEscape(tc.ct)}))
		if body != tc.want {
			t.Errorf("%s as %s: %q; want %q", tc.path, tc.ct, body, tc.want)
		}
	}
	got := fetchOK(t, w, map[string]any{"url": base + "/latin1?ct=" + url.QueryEscape("text/plain; charset=x-klingon")})
	want := "response from " + base + "/latin1 declared unknown charset x-klingon; cannot decode its text"
	if got != want {
		t.Errorf("unknown charset: %q; want %q", got, want)
	}
}

func TestStatusAndTransportFailures(t *testing.T) {
	w, _, base := site(t, func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(rw, r)
		case "/broken":
			http.Error(rw, "boom", http.StatusInternalServerError)
		case "/cut":
			// Promise 1000 bytes, send a few, drop the connection.
			conn, bufw, err := http.NewResponseController(rw).Hijack()
			if err != nil {
				panic(err)
			}
			_, _ = bufw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\npartial")
			_ = bufw.Flush()
			_ = conn.Close()
		}
	}, nil)
	for _, tc := range []struct{ path, want string }{
		{"/missing?token=secret#frag", "HTTP 404 from " + base + "/missing; try a different URL"},
		{"/broken", "HTTP 500 from " + base + "/broken; try a different URL"},
		{"/cut?token=secret", "reading the response from " + base + "/cut failed: network error; try again or try a different URL"},
	} {
		if got := fetchOK(t, w, map[string]any{"url": base + tc.path}); got != tc.want {
			t.Errorf("%s: %q; want %q", tc.path, got, tc.want)
		}
	}
	// A refused connection is a soft network error.
	closed := newServer(t, okHandler)
	port := closed.port()
	closed.Close()
	env := newEnv()
	env.res.set("gone.test", []string{publicIP})
	w2 := env.fetcher(t, testPolicy(port))
	want := fmt.Sprintf("fetch failed for http://gone.test:%d/x: network error; try a different URL", port)
	if got := fetchOK(t, w2, map[string]any{"url": fmt.Sprintf("http://gone.test:%d/x?secret=1", port)}); got != want {
		t.Errorf("refused connection: %q; want %q", got, want)
	}
}

func TestCancelledCall(t *testing.T) {
	arrived := make(chan struct{})
	w, _, base := site(t, func(rw http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := w.Call(ctx, args(t, map[string]any{"url": base + "/slow"}))
	if KindOf(err) != KindCancelled {
		t.Fatalf("cancelled call: %v (kind %v); want kind Cancelled", err, KindOf(err))
	}
}

func TestErrorRendering(t *testing.T) {
	env := newEnv()
	env.res.set("public.test", []string{"127.0.0.1"})
	p := DefaultPolicy()
	p.AllowIPLiterals = true
	w := env.fetcher(t, p)

	err := fetchHard(t, w, map[string]any{"url": "https://public.test/?token=secret"})
	for _, hidden := range []string{"127.0.0.1", "127.0.0.0/8", "secret"} {
		if strings.Contains(err.Error(), hidden) {
			t.Errorf("model-facing error %q shows %q", err.Error(), hidden)
		}
	}
	err = fetchHard(t, w, map[string]any{"url": "https://169.254.169.254/latest/?token=secret"})
	if err.Error() != "web_fetch: host 169.254.169.254 is not fetchable" {
		t.Errorf("blocked literal: %q", err.Error())
	}
	if strings.Contains(err.Error(), "169.254.0.0/16") || strings.Contains(err.Error(), "secret") {
		t.Errorf("blocked literal error shows the range or query: %q", err.Error())
	}

	logs := env.logs.String()
	for _, want := range []string{"127.0.0.1", "127.0.0.0/8", "169.254.0.0/16"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "secret") {
		t.Errorf("logs contain the query secret:\n%s", logs)
	}
}
