package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/promptforge-go/promptforge/internal/apiurl"
	"github.com/promptforge-go/promptforge/internal/humantime"
	"github.com/promptforge-go/promptforge/internal/redact"
)

const (
	// DefaultTimeout bounds a chat request when Options.Timeout is zero.
	DefaultTimeout = 120 * time.Second
	// DefaultModelsTimeout bounds GET /models when Options.ModelsTimeout
	// is zero, as for the run command, which has no prompts.toml. It is
	// the same 10s as config.DefaultGatewayTimeout, the [gateway].timeout
	// default that serve passes explicitly; config may not import gateway,
	// so config owns the setting and this is the zero value's meaning for
	// hosts without one (a server test keeps the two equal).
	DefaultModelsTimeout = 10 * time.Second
	// MaxReplyBytes caps a success body; a larger one is malformed.
	MaxReplyBytes = 16 << 20
	// DefaultMaxRequestBytes is the default of Options.MaxRequestBytes:
	// twice the largest prose block a run may render (16 MiB), room for a
	// conversation with tool results, while a runaway prompt is stopped
	// long before the process is in danger.
	DefaultMaxRequestBytes = 32 << 20

	// maxErrorRead is how much of a non-2xx body is read: enough for the
	// 2,000 characters Body keeps, without downloading a huge error page.
	maxErrorRead = 64 << 10

	opModels = "GET /models"
	opChat   = "POST /chat/completions"

	// redacted stands for the key in the renderings of a Client and of
	// its Options.
	redacted = redact.Placeholder
)

// New validates cfg and returns a client.
func New(cfg Options) (*Client, error) {
	base, err := validateURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if err := validateKey(cfg.APIKey.Reveal()); err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 || cfg.ModelsTimeout < 0 || cfg.EmbeddingsTimeout < 0 {
		return nil, configError("gateway timeout is negative: use a positive duration, or 0 for the default")
	}
	if cfg.MaxRequestBytes < 0 {
		return nil, configError("gateway request size limit is negative: use a positive size, or 0 for the default")
	}
	if cfg.ThinkingSwitch != "" && !cfg.ThinkingSwitch.Valid() {
		return nil, configError(fmt.Sprintf("gateway thinking switch %q is not valid: use %q, %q or %q",
			cfg.ThinkingSwitch, ThinkingSwitchTemplateKwargs, ThinkingSwitchReasoningEffort, ThinkingSwitchNone))
	}
	c := &Client{
		base:          base,
		auth:          "Bearer " + cfg.APIKey.Reveal(),
		key:           cfg.APIKey,
		timeout:       orDefault(cfg.Timeout, DefaultTimeout),
		modelsTimeout: orDefault(cfg.ModelsTimeout, DefaultModelsTimeout),
		switchDefault: cfg.ThinkingSwitch,
		maxRequest:    cfg.MaxRequestBytes,
		http:          cfg.HTTPClient,
	}
	c.embeddingsTimeout = orDefault(cfg.EmbeddingsTimeout, DefaultEmbeddingsTimeout)
	if c.http == nil {
		c.http = &http.Client{Transport: NewTransport()}
	}
	if c.maxRequest == 0 {
		c.maxRequest = DefaultMaxRequestBytes
	}
	return c, nil
}

// NewDisabled returns a client that refuses every call with a KindDisabled
// error wrapping ErrNotConfigured. Hosts use it when no gateway is
// configured, so a prompt that never reaches a model still runs and one
// that does fails with reason (e.g. "set PROMPTFORGE_GATEWAY_URL and
// PROMPTFORGE_GATEWAY_API_KEY").
func NewDisabled(reason string) *Client {
	if strings.TrimSpace(reason) == "" {
		reason = "configure a gateway URL and API key"
	}
	return &Client{disabled: reason}
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// CloseIdleConnections closes the client's idle keep-alive connections,
// e.g. when a host replaces its client on reload.
func (c *Client) CloseIdleConnections() {
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
}

// BaseURL is the validated API root the client sends to.
func (c *Client) BaseURL() string { return c.base }

// validateURL checks the gateway URL against the API-root rule (package
// apiurl, shared with config) and returns it with trailing slashes
// trimmed. Errors never repeat the URL: it may hold credentials.
func validateURL(raw string) (string, error) {
	const example = " (e.g. http://127.0.0.1:8081/v1)"
	_, err := apiurl.Check(raw)
	if err == nil {
		return strings.TrimRight(raw, "/"), nil
	}
	switch err.Problem {
	case apiurl.Empty:
		return "", configError("gateway URL is empty: set it to the gateway's API root" + example)
	case apiurl.Unparseable:
		return "", configError("gateway URL cannot be parsed (" + err.Err.Error() + "): use an absolute http(s) URL" + example)
	case apiurl.Userinfo:
		return "", configError("gateway URL must not contain credentials (user:password@): put the key in the API key setting instead")
	case apiurl.NoScheme:
		return "", configError("gateway URL has no scheme: use an absolute http(s) URL" + example)
	case apiurl.BadScheme:
		return "", configError(fmt.Sprintf("gateway URL scheme %q is not supported: use http or https", err.Scheme))
	case apiurl.NoHost:
		return "", configError("gateway URL has no host: use an absolute http(s) URL" + example)
	case apiurl.Query:
		return "", configError("gateway URL must not have a query (?...): give only the API root" + example)
	default: // apiurl.Fragment
		return "", configError("gateway URL must not have a fragment (#...): give only the API root" + example)
	}
}

func validateKey(key string) error {
	if strings.TrimSpace(key) == "" {
		return configError("gateway API key is empty: set the key the gateway expects as its bearer token")
	}
	if strings.TrimSpace(key) != key {
		return configError("gateway API key has leading or trailing whitespace: remove it")
	}
	for i := 0; i < len(key); i++ {
		if b := key[i]; b < 0x20 || b == 0x7f {
			return configError("gateway API key contains a control character, which cannot be sent in an HTTP header")
		}
	}
	return nil
}

// String shows where the client sends requests, never the key.
func (c *Client) String() string {
	if c == nil {
		return "gateway.Client(nil)"
	}
	if c.disabled != "" {
		return "gateway.Client{disabled: " + c.disabled + "}"
	}
	return "gateway.Client{url: " + c.base + ", key: " + redacted + "}"
}

// GoString keeps %#v as safe as %v.
func (c *Client) GoString() string { return c.String() }

// Format makes every verb (%d and %x included, which would otherwise walk
// the struct fields) print String.
func (c *Client) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// LogValue logs the URL and a redacted key.
func (c *Client) LogValue() slog.Value {
	if c == nil {
		return slog.StringValue("nil")
	}
	if c.disabled != "" {
		return slog.GroupValue(slog.String("disabled", c.disabled))
	}
	return slog.GroupValue(slog.String("url", c.base), slog.String("key", redacted))
}

// Format prints the configuration for every verb (%v, %#v, %s, %d ...):
// the key is a secret.Secret and redacts itself, but BaseURL has not been
// validated yet and may carry userinfo or a query, which are hidden here.
func (cfg Options) Format(f fmt.State, _ rune) {
	key := ""
	if !cfg.APIKey.IsZero() {
		key = redacted
	}
	_, _ = fmt.Fprintf(f, "gateway.Options{BaseURL: %s, APIKey: %s, Timeout: %s, ModelsTimeout: %s}",
		redact.RawURL(cfg.BaseURL), key, cfg.Timeout, cfg.ModelsTimeout)
}

// LogValue logs the configuration with the key redacted.
func (cfg Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("url", redact.RawURL(cfg.BaseURL)),
		slog.String("key", redacted),
		slog.Duration("timeout", cfg.Timeout),
		slog.Duration("models_timeout", cfg.ModelsTimeout),
	)
}

func (c *Client) disabledError(op string) *Error {
	return &Error{Kind: KindDisabled, Op: op, msg: "no gateway configured: " + c.disabled, err: ErrNotConfigured}
}

// errTimeout marks a request context that ended because of the client's
// own timeout, as opposed to the caller's context. at is when it ends.
type errTimeout struct {
	d  time.Duration
	at time.Time
}

func (e *errTimeout) Error() string {
	return "gateway timeout of " + humantime.Format(e.d) + " elapsed"
}

// do sends one request with the client's usual reply bounds (see send).
func (c *Client) do(ctx context.Context, method, path, op string, body []byte, timeout time.Duration) (int, []byte, *Error) {
	return c.send(ctx, exchange{method: method, path: path, op: op, body: body, timeout: timeout,
		replyLimit: MaxReplyBytes, errorLimit: maxErrorRead})
}

// exchange is one request and the bounds its reply is read under.
type exchange struct {
	method, path, op string
	body             []byte
	timeout          time.Duration
	// replyLimit caps a 2xx body; a larger one is a KindMalformed error
	// marked oversize.
	replyLimit int64
	// errorLimit is how much of a non-2xx body is read.
	errorLimit int64
	// errorReadFails makes a broken non-2xx body a transport error, where
	// otherwise the status alone is reported.
	errorReadFails bool
	// header holds headers besides the client's own (a search
	// provider's key header).
	header http.Header
}

// send sends one request and returns the status and body: the full body
// (at most x.replyLimit) for 2xx, a bounded prefix otherwise. Every
// failure is classified here.
func (c *Client) send(ctx context.Context, x exchange) (int, []byte, *Error) {
	op := x.op
	if err := ctx.Err(); err != nil {
		return 0, nil, cancelled(ctx, op)
	}
	cause := &errTimeout{d: x.timeout, at: time.Now().Add(x.timeout)}
	var reqCtx context.Context
	bounded := boundsDeadlines(c.http)
	if bounded {
		// The Transport makes the timeout the connection's deadline
		// (requestDeadline): no timer and context of its own per request,
		// held while a run waits on the model (docs/benchmarks.md, "mem5").
		reqCtx = context.WithValue(ctx, deadlineKey{}, cause)
	} else {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeoutCause(ctx, x.timeout, cause)
		defer cancel()
	}

	var rd io.Reader
	if x.body != nil {
		rd = bytes.NewReader(x.body)
	}
	req, err := http.NewRequestWithContext(reqCtx, x.method, c.base+x.path, rd)
	if err != nil {
		return 0, nil, &Error{Kind: KindConfig, Op: op, msg: "cannot build the gateway request " + op + ": " + err.Error(), err: err}
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	for k, v := range x.header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if x.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := c.roundTrip(req, bounded)
	if err != nil {
		return 0, nil, c.transportFailure(ctx, reqCtx, cause, op, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// A short or broken error body still leaves the status, which is
		// what the caller acts on.
		data, err := io.ReadAll(io.LimitReader(resp.Body, x.errorLimit))
		if err != nil && x.errorReadFails {
			e := c.transportFailure(ctx, reqCtx, cause, op, err)
			e.reading = true
			return resp.StatusCode, nil, e
		}
		return resp.StatusCode, data, nil
	}
	oversize := func() *Error {
		e := malformed(op, resp.StatusCode, "the reply body exceeds "+sizeText(x.replyLimit))
		e.oversize = true
		return e
	}
	if resp.ContentLength > x.replyLimit {
		return resp.StatusCode, nil, oversize()
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, x.replyLimit+1))
	if err != nil {
		e := c.transportFailure(ctx, reqCtx, cause, op, err)
		e.reading = true
		return resp.StatusCode, nil, e
	}
	if int64(len(data)) > x.replyLimit {
		return resp.StatusCode, nil, oversize()
	}
	return resp.StatusCode, data, nil
}

// roundTrip sends req as c.http.Do does. When c.http is a plain client
// (no redirect policy, cookie jar or timeout of its own) of a transport
// that bounds the request by its deadline (bounded: send's
// boundsDeadlines of c.http, which put the deadline in req's context
// instead of a timer; not asked twice per request), the request
// goes to the transport directly, and only a redirect is handed to
// c.http, which follows it from the reply already read (replayFirst):
// http.Client.Do keeps a copy of the request's headers and URL for
// redirects (about 600 bytes) for as long as the request waits, which is
// while a run waits on the model (docs/benchmarks.md, "mem5"). Errors
// are wrapped as Do wraps them.
func (c *Client) roundTrip(req *http.Request, bounded bool) (*http.Response, error) {
	hc := c.http
	if hc.CheckRedirect != nil || hc.Jar != nil || !bounded {
		return hc.Do(req)
	}
	resp, err := hc.Transport.RoundTrip(req)
	if err != nil {
		// As Do's send: plain HTTP at an https URL fails the handshake on
		// a record header of "HTTP/", which it names for what it is.
		if re, ok := err.(tls.RecordHeaderError); ok && string(re.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		op := "Get"
		if m := req.Method; m != "" {
			op = m[:1] + strings.ToLower(m[1:])
		}
		return nil, &url.Error{Op: op, URL: req.URL.String(), Err: err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if resp.Header.Get("Location") == "" {
			return resp, nil
		}
	default:
		return resp, nil
	}
	follow := *hc
	follow.Transport = &replayFirst{held: resp, next: hc.Transport}
	return follow.Do(req)
}

// replayFirst is the transport http.Client follows a redirect through
// when the first reply was read without it (Client.roundTrip): that reply
// for the first request, then next's round trips. The request is not sent
// again: the first round trip's body was read, and is closed here, as a
// RoundTripper must.
type replayFirst struct {
	mu   sync.Mutex
	held *http.Response
	next http.RoundTripper
}

func (r *replayFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	held := r.held
	r.held = nil
	r.mu.Unlock()
	if held == nil {
		return r.next.RoundTrip(req)
	}
	if req.Body != nil {
		req.Body.Close()
	}
	return held, nil
}

// sizeText renders a byte cap for a message: "16 MiB" for whole MiB, else
// the byte count.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func (c *Client) transportFailure(ctx, reqCtx context.Context, cause *errTimeout, op string, err error) *Error {
	if ctx.Err() != nil {
		return cancelled(ctx, op)
	}
	if context.Cause(reqCtx) == cause || errors.Is(err, cause) {
		return &Error{
			Kind:    KindTransport,
			Op:      op,
			timeout: true,
			err:     cause,
			msg:     "gateway " + op + " timed out after " + humantime.Format(cause.d) + ": the gateway or the model did not answer in time; retry, or raise " + timeoutSetting(op),
		}
	}
	return &Error{
		Kind: KindTransport,
		Op:   op,
		err:  err,
		msg:  "gateway " + op + " failed: " + err.Error() + "; check that the gateway is running at the configured URL",
	}
}

// timeoutSetting names the prompts.toml key that bounds op, so a timeout
// message says exactly what to raise.
func timeoutSetting(op string) string {
	switch op {
	case opChat:
		return "[gateway].request_timeout in prompts.toml"
	case opModels:
		return "[gateway].timeout in prompts.toml"
	case opEmbeddings:
		return "[retrieval].timeout in prompts.toml"
	}
	return "the gateway timeout"
}

func cancelled(ctx context.Context, op string) *Error {
	err := ctx.Err()
	msg := "gateway " + op + " cancelled by the caller: " + err.Error()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		msg += " (" + cause.Error() + ")"
	}
	return &Error{Kind: KindCancelled, Op: op, err: err, msg: msg}
}
