package tools

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/promptforge-go/promptforge/internal/redact"
)

// route is how a content type is handled (gateway-picker-webfetch §3.7).
type route uint8

const (
	routeRefused route = iota
	// routeHTML: converted to markdown; over the byte cap it is refused,
	// because half a document extracts badly.
	routeHTML
	// routeStructured: returned verbatim; over the cap it is refused,
	// because a prefix of JSON or XML is not valid JSON or XML.
	routeStructured
	// routeFlat: returned verbatim; over the cap the prefix is kept.
	routeFlat
)

// routeFor classifies a media type. The declared type is trusted as is:
// no sniffing, so a server cannot make a binary body look like text.
func routeFor(mediaType string) route {
	switch mediaType {
	case "text/html", "application/xhtml+xml":
		return routeHTML
	case "application/json", "application/xml", "text/xml":
		return routeStructured
	}
	top, sub, _ := strings.Cut(mediaType, "/")
	if (top == "application" || top == "text") && (strings.HasSuffix(sub, "+json") || strings.HasSuffix(sub, "+xml")) {
		return routeStructured
	}
	if top == "text" {
		return routeFlat
	}
	return routeRefused
}

// consume turns a final (non-redirect) response into the tool's text.
func (w *WebFetch) consume(fctx context.Context, u *url.URL, resp *http.Response, a fetchArgs) (string, *failure) {
	shown := redact.URL(u)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", soft(fmt.Sprintf("HTTP %d from %s; try a different URL", resp.StatusCode, shown), "status "+resp.Status, nil)
	}
	ct := resp.Header.Get("Content-Type")
	if strings.TrimSpace(ct) == "" {
		return "", soft("response from "+shown+" has no content type, so it cannot be returned as text; try a different URL", "no Content-Type header", nil)
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if errors.Is(err, mime.ErrInvalidMediaParameter) {
		params, err = nil, nil
	}
	r := routeRefused
	if err == nil {
		r = routeFor(mediaType)
	}
	if r == routeRefused {
		return "", soft(fmt.Sprintf("content type %s from %s cannot be returned as text; try a different URL that serves HTML, JSON, XML or plain text",
			redact.Text(ct, 100), shown), "content type refused", err)
	}

	limit := w.policy.MaxBytes
	tooLarge := func(detail string) *failure {
		return soft(fmt.Sprintf("response from %s exceeds the %d-byte size cap; try a smaller page or a different URL", shown, limit), detail, nil)
	}
	encoding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	identity := encoding == "" || encoding == "identity"
	switch encoding {
	case "", "identity", "gzip", "x-gzip", "br":
	default:
		return "", soft(fmt.Sprintf("response from %s uses content encoding %s, which cannot be decoded; try a different URL",
			shown, redact.Text(encoding, 40)), "unsupported Content-Encoding", nil)
	}
	// An honest Content-Length tells us early; a compressed one says
	// nothing about the decompressed size, which is what the cap counts.
	if identity && resp.ContentLength > limit && r != routeFlat {
		return "", tooLarge(fmt.Sprintf("declared Content-Length %d", resp.ContentLength))
	}

	data, over, rerr := readDecoded(resp.Body, encoding, limit)
	if rerr != nil {
		if timedOut(fctx, rerr) {
			return "", soft("request to "+shown+" timed out while reading the body; try again later or try a different URL", rerr.Error(), rerr)
		}
		return "", soft("reading the response from "+shown+" failed: network error; try again or try a different URL", rerr.Error(), rerr)
	}
	truncated := false
	if over {
		if r != routeFlat {
			return "", tooLarge("decompressed body passed the cap")
		}
		truncated = true
	}

	label := strings.TrimSpace(params["charset"])
	text, ok := decodeCharset(data, label)
	if !ok {
		return "", soft(fmt.Sprintf("response from %s declared unknown charset %s; cannot decode its text", shown, redact.Text(label, 64)), "unknown charset", nil)
	}

	extraction := "plain"
	if r == routeHTML {
		text, extraction = htmlToMarkdown(fctx, text, u, a.raw)
	}
	text, cut := capChars(text, a.maxChars)
	truncated = truncated || cut
	return fmt.Sprintf("url: %s\ntruncated: %t\nextraction: %s\n\n%s", u.String(), truncated, extraction, text), nil
}

// readDecoded reads at most limit decompressed bytes. over reports that
// the body had more; only limit bytes are returned then. Counting after
// decompression is what stops a small gzip bomb.
func readDecoded(body io.Reader, encoding string, limit int64) (data []byte, over bool, err error) {
	var r io.Reader
	switch encoding {
	case "", "identity":
		r = body
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, false, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		r = zr
	case "br":
		r = brotli.NewReader(body)
	default:
		return nil, false, fmt.Errorf("content encoding %q is not supported", encoding)
	}
	data, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > limit {
		return data[:limit], true, nil
	}
	return data, false, nil
}

// decodeCharset decodes data per the charset label. No label or UTF-8
// decodes lossily (invalid bytes become U+FFFD); an unknown label is
// refused rather than guessed.
func decodeCharset(data []byte, label string) (string, bool) {
	if label != "" {
		enc, err := htmlindex.Get(label)
		if err != nil {
			return "", false
		}
		if name, _ := htmlindex.Name(enc); name != "utf-8" {
			out, err := enc.NewDecoder().Bytes(data)
			if err != nil {
				return "", false
			}
			return string(out), true
		}
	}
	return strings.ToValidUTF8(string(trimPartialRune(data)), "\uFFFD"), true
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end, left by
// cutting a body at the byte cap.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// capChars keeps the first n characters (Unicode scalar values) of s.
func capChars(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i], true
		}
		count++
	}
	return s, false
}
