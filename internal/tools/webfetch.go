package tools

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/promptforge-go/promptforge/internal/redact"
)

// Identity and description of web_fetch (prompt-language §6.2).
const (
	WebFetchName        = "web_fetch"
	WebFetchDescription = "Fetch a web page and return its main content as markdown."
	// ServerName is the server half of the built-in tools' identities.
	ServerName = "promptforge"
)

// FetchOption customises a WebFetch beyond its Policy: where names are
// resolved, how connections are opened, where logs go.
type FetchOption func(*fetchOptions)

type fetchOptions struct {
	resolver Resolver
	dial     DialFunc
	logger   *slog.Logger
	tls      *tls.Config
}

// WithResolver replaces the system resolver. The address policy applies
// to whatever it answers.
func WithResolver(r Resolver) FetchOption {
	return func(o *fetchOptions) { o.resolver = r }
}

// WithDialContext replaces how an already-vetted "ip:port" is dialled
// (the default is a net.Dialer). The connect timeout is applied to ctx
// before it is called.
func WithDialContext(d DialFunc) FetchOption {
	return func(o *fetchOptions) { o.dial = d }
}

// WithLogger sends diagnostics (blocked addresses with their range, lookup
// failures, soft failures with their cause) to l. Without it they are
// dropped.
func WithLogger(l *slog.Logger) FetchOption {
	return func(o *fetchOptions) { o.logger = l }
}

// WithTLSConfig sets the TLS client configuration, e.g. extra root CAs.
// The config is cloned.
func WithTLSConfig(c *tls.Config) FetchOption {
	return func(o *fetchOptions) { o.tls = c.Clone() }
}

// WebFetch is the web_fetch tool: it fetches one URL under a Policy and
// returns the page's main content as markdown (or the text as is). It is
// safe for concurrent use. Call CloseIdleConnections when done with it.
type WebFetch struct {
	policy    Policy
	admit     *admitter
	transport *http.Transport
	log       *slog.Logger
	desc      Descriptor
}

// NewWebFetch validates policy and builds the tool.
func NewWebFetch(policy Policy, opts ...FetchOption) (*WebFetch, error) {
	p, err := policy.normalized()
	if err != nil {
		return nil, err
	}
	o := fetchOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.resolver == nil {
		o.resolver = net.DefaultResolver
	}
	if o.dial == nil {
		o.dial = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}

	addrs := newAddressPolicy(p.DenyCIDRs, p.AllowHostAddresses)
	profile := newIDNAProfile()
	guard := &guardedDialer{
		resolver:        o.resolver,
		dial:            o.dial,
		connectTimeout:  p.ConnectTimeout,
		addrs:           addrs,
		allowIPLiterals: p.AllowIPLiterals,
		ports:           p.AllowPorts,
		profile:         profile,
		log:             o.logger,
	}
	transport := &http.Transport{
		// Ambient HTTP(S)_PROXY settings would send requests to a host the
		// address policy never saw.
		Proxy:                  nil,
		DialContext:            guard.DialContext,
		TLSClientConfig:        o.tls,
		ForceAttemptHTTP2:      true,
		IdleConnTimeout:        p.PoolIdleTimeout,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    2,
		MaxResponseHeaderBytes: 64 << 10,
		// Decompression is done here, not by the transport, so the byte
		// cap counts decompressed bytes for gzip and brotli alike.
		DisableCompression: true,
	}
	w := &WebFetch{
		policy:    p,
		admit:     &admitter{allowHTTP: p.AllowHTTP, allowIPLiterals: p.AllowIPLiterals, ports: p.AllowPorts, addrs: addrs, profile: profile},
		transport: transport,
		log:       o.logger,
	}
	w.desc = Descriptor{
		ID:          ID{Server: ServerName, Name: WebFetchName},
		WireName:    WebFetchName,
		Description: WebFetchDescription,
		Parameters:  webFetchSchema(p.MaxChars),
	}
	return w, nil
}

// Policy returns the validated, normalized policy in force.
func (w *WebFetch) Policy() Policy { return w.policy }

// Descriptor implements Tool.
func (w *WebFetch) Descriptor() Descriptor { return w.desc }

// CloseIdleConnections closes kept-alive connections (and with them the
// transport's per-connection goroutines).
func (w *WebFetch) CloseIdleConnections() { w.transport.CloseIdleConnections() }

func webFetchSchema(ceiling int) json.RawMessage {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"url": map[string]any{
				"type":        "string",
				"description": "Absolute https URL of the page to fetch.",
			},
			"max_chars": map[string]any{
				"type":        "integer",
				"minimum":     1,
				"maximum":     ceiling,
				"default":     ceiling,
				"description": "Most characters of content to return; longer content is cut and marked truncated.",
			},
			"raw": map[string]any{
				"type":        "boolean",
				"default":     false,
				"description": "Convert the whole HTML page instead of isolating the main article (keeps tables and navigation).",
			},
		},
		"required": []string{"url"},
	}
	b, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tools: web_fetch schema does not marshal: %v", err))
	}
	return b
}

type fetchArgs struct {
	url      string
	maxChars int
	raw      bool
}

// parseFetchArgs applies gateway-picker-webfetch §3.1. Unknown keys are
// ignored.
func (w *WebFetch) parseFetchArgs(raw json.RawMessage) (fetchArgs, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return fetchArgs{}, invalidArgs("web_fetch: arguments must be a JSON object with a url")
	}
	a := fetchArgs{maxChars: w.policy.MaxChars}
	var s *string
	if v, ok := m["url"]; !ok || json.Unmarshal(v, &s) != nil || s == nil {
		return fetchArgs{}, invalidArgs("web_fetch: missing url argument")
	}
	a.url = *s
	if v, ok := m["max_chars"]; ok && !isJSONNull(v) {
		n, ok := positiveInteger(v)
		if !ok {
			return fetchArgs{}, invalidArgs("web_fetch: max_chars must be a positive integer")
		}
		a.maxChars = int(min(n, uint64(w.policy.MaxChars)))
	}
	if v, ok := m["raw"]; ok && !isJSONNull(v) {
		if json.Unmarshal(v, &a.raw) != nil {
			return fetchArgs{}, invalidArgs("web_fetch: raw must be a boolean")
		}
	}
	return a, nil
}

func isJSONNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// positiveInteger accepts a JSON integer literal >= 1 (no fraction, no
// exponent). Integers too large for uint64 saturate: they are clamped to
// the ceiling anyway.
func positiveInteger(v json.RawMessage) (uint64, bool) {
	s := string(bytes.TrimSpace(v))
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return ^uint64(0), true
		}
		return 0, false
	}
	return n, n >= 1
}

// Call implements Tool. Soft failures come back as untrusted text with a
// nil error; argument and policy violations are *Error with kind
// KindInvalidArguments; a cancelled ctx is KindCancelled.
func (w *WebFetch) Call(ctx context.Context, raw json.RawMessage) (Result, error) {
	a, err := w.parseFetchArgs(raw)
	if err != nil {
		return Result{}, err
	}
	text, f := w.fetch(ctx, a)
	if f == nil {
		return Result{Text: text}, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, cancelled(WebFetchName, err)
	}
	if f.hard {
		w.log.Info("web_fetch: refused", "url", redact.RawURL(a.url), "reason", f.model, "detail", f.detail)
		return Result{}, &Error{Kind: KindInvalidArguments, Msg: WebFetchName + ": " + f.model, Err: f}
	}
	w.log.Debug("web_fetch: soft failure", "url", redact.RawURL(a.url), "reason", f.model, "detail", f.detail)
	return Result{Text: f.model}, nil
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// fetch runs the pipeline of gateway-picker-webfetch §3.2 after argument
// parsing.
func (w *WebFetch) fetch(ctx context.Context, a fetchArgs) (string, *failure) {
	t, f := w.admit.admit(a.url)
	if f != nil {
		return "", f
	}
	fctx, cancel := context.WithTimeout(ctx, w.policy.Timeout)
	defer cancel()

	for requests := 1; ; requests++ {
		// The transport is used directly, not through an http.Client:
		// fetch follows redirects itself so that each hop, including one
		// whose Location does not even parse, is judged by admission
		// before anything is sent; and there is no cookie jar to bypass.
		resp, err := w.transport.RoundTrip(w.newRequest(fctx, t.u))
		if err != nil {
			return "", w.transportFailure(fctx, t.u, err)
		}
		loc := resp.Header.Get("Location")
		if !isRedirect(resp.StatusCode) || loc == "" {
			defer resp.Body.Close()
			return w.consume(fctx, t.u, resp, a)
		}
		// The redirect's own body is not wanted; draining a little lets a
		// small one keep its connection alive.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
		next, f := w.follow(t, loc, requests)
		if f != nil {
			return "", f
		}
		t = next
	}
}

// newRequest builds a GET that carries no ambient identity: no cookies,
// no Authorization, no Referer; only the policy's User-Agent and what we
// can decode.
func (w *WebFetch) newRequest(ctx context.Context, u *url.URL) *http.Request {
	req := (&http.Request{
		Method:     http.MethodGet,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header: http.Header{
			"User-Agent":      {w.policy.UserAgent},
			"Accept":          {"text/html, application/xhtml+xml, application/json;q=0.9, text/*;q=0.8, */*;q=0.1"},
			"Accept-Encoding": {"gzip, br"},
		},
		Host: u.Host,
	}).WithContext(ctx)
	return req
}

// follow decides one redirect hop (gateway-picker-webfetch §3.6): hop count,
// no https to http downgrade, and full admission of the target. Its address
// is checked again when the next request dials.
func (w *WebFetch) follow(from *target, loc string, requests int) (*target, *failure) {
	refused := func(to, reason, detail string) *failure {
		return soft(fmt.Sprintf("redirect from %s to %s refused: %s", redact.URL(from.u), to, reason), detail, nil)
	}
	next, err := from.u.Parse(whatwgTrim(loc))
	shown := redact.RawURL(loc)
	if err == nil {
		shown = redact.URL(next)
	}
	if requests > w.policy.MaxRedirects {
		return nil, refused(shown, fmt.Sprintf("too many redirects (the limit is %d)", w.policy.MaxRedirects), "hop limit reached")
	}
	if err != nil {
		return nil, refused(shown, "invalid url", "location does not parse")
	}
	if from.u.Scheme == "https" && strings.EqualFold(next.Scheme, "http") {
		return nil, refused(shown, "https to http downgrade", "downgrade refused")
	}
	t, f := w.admit.admitParsed(next)
	if f != nil {
		return nil, refused(shown, f.model, f.detail)
	}
	return t, nil
}

// transportFailure maps an error from sending a request to a failure.
func (w *WebFetch) transportFailure(fctx context.Context, u *url.URL, err error) *failure {
	var f *failure
	if errors.As(err, &f) {
		return f
	}
	if timedOut(fctx, err) {
		return soft("request to "+redact.URL(u)+" timed out; try again later or try a different URL", err.Error(), err)
	}
	return soft("fetch failed for "+redact.URL(u)+": network error; try a different URL", err.Error(), err)
}

func timedOut(fctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(fctx.Err(), context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
