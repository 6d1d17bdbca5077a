package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/promptforge-go/promptforge/internal/redact"
)

// Bounds of POST {base}/tools/web_search (gateway-picker-webfetch §1.14(c)).
// They are the search endpoint's own, not the chat request's: a search
// answers in seconds, and its reply goes to a model as text.
const (
	// SearchTimeout bounds one whole search request.
	SearchTimeout = 30 * time.Second
	// MaxSearchReplyBytes caps a search reply (and how much of an error
	// body is read).
	MaxSearchReplyBytes = 256 << 10

	// maxSearchErrorChars is how much of an error body a message quotes.
	maxSearchErrorChars = 2000

	opSearch = "POST /tools/web_search"
)

// Search sends one web search: query is the JSON object of the search
// contract (query, count, freshness, country, search_lang, safesearch,
// include_domains, exclude_domains), which the caller has validated; it
// is sent as it is. The reply is returned raw once it is checked to be a
// JSON object with a results array whose entries each have a non-blank
// url.
//
// Every failure is an *Error: KindStatus for a non-2xx reply (its message
// quotes the body, whitespace collapsed, capped at 2,000 characters, and
// with the API key cut out, since the model reading it may need the
// backend's reason), KindMalformed for a reply that breaks the contract or
// exceeds MaxSearchReplyBytes, KindTransport, KindCancelled, KindConfig
// and KindDisabled as for Complete. Messages say what failed and what to
// do; the caller prefixes its tool name.
func (c *Client) Search(ctx context.Context, query json.RawMessage) (json.RawMessage, error) {
	if c.disabled != "" {
		return nil, c.disabledError(opSearch)
	}
	status, data, herr := c.send(ctx, exchange{
		method: "POST", path: PathSearch, op: opSearch, body: query, timeout: SearchTimeout,
		replyLimit: MaxSearchReplyBytes, errorLimit: MaxSearchReplyBytes + 1, errorReadFails: true,
	})
	if herr != nil {
		return nil, c.searchError(herr)
	}
	if status < 200 || status > 299 {
		return nil, &Error{Kind: KindStatus, Op: opSearch, Status: status, body: escapeBody(data),
			msg: fmt.Sprintf("backend returned %d: %s", status, c.searchBody(data))}
	}
	if problem := checkSearchReply(data); problem != "" {
		return nil, &Error{Kind: KindMalformed, Op: opSearch, Status: status, msg: "backend reply is malformed: " + problem}
	}
	return data, nil
}

// searchError rewords a failure of the exchange in web_search's terms,
// which name the gateway's URL (never the key) and say what to do.
func (c *Client) searchError(e *Error) *Error {
	switch {
	case e.Kind == KindCancelled:
		return e
	case e.Kind == KindConfig:
		e.msg = "cannot build the request"
	case e.oversize:
		e.msg = fmt.Sprintf("backend reply exceeds the %d-byte cap", MaxSearchReplyBytes)
	case e.Kind == KindTransport && e.timeout:
		e.msg = fmt.Sprintf("%s at %s did not answer within %v; try again later", c.searchWho(), c.base, SearchTimeout)
	case e.Kind == KindTransport:
		what := "cannot reach " + c.searchWho()
		if e.reading {
			what = "reading the reply of " + c.searchWho() + " failed"
		}
		cause := e.err
		var ue *url.Error
		if errors.As(cause, &ue) {
			cause = ue.Err
		}
		e.msg = fmt.Sprintf("%s at %s: %v; check that %s is running", what, c.base, cause, c.searchWho())
	}
	return e
}

// searchWho names the search backend in a message.
func (c *Client) searchWho() string {
	if c.searchName != "" {
		return c.searchName
	}
	return "the gateway"
}

// searchBody renders an error body for a message: the key can never
// appear (a misbehaving backend might echo headers), control characters
// and runs of whitespace collapse, and it is capped.
func (c *Client) searchBody(b []byte) string {
	text := redact.Secret(string(b), c.key.Reveal())
	text = redact.Text(text, maxSearchErrorChars)
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
