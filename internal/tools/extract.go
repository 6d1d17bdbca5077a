package tools

import (
	"context"
	"net/url"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
)

// minArticleBytes is the size below which an isolated article is judged a
// failed extraction (a cookie banner, a title alone) and the whole page
// is converted instead (gateway-picker-webfetch §3.8).
const minArticleBytes = 100

// htmlToMarkdown converts page, fetched from u, and says which extraction
// ran: "readability" (Mozilla-Readability-style article isolation, via
// go-readability, a port of Mozilla's algorithm) or "raw-html" (the whole
// page, used for raw requests and when isolation finds too little).
func htmlToMarkdown(ctx context.Context, page string, u *url.URL, raw bool) (string, string) {
	if !raw {
		if md, ok := article(ctx, page, u); ok && len(md) >= minArticleBytes {
			return md, "readability"
		}
	}
	return wholePage(ctx, page, u), "raw-html"
}

// article isolates the main content. The parsers run on bytes a remote
// server chose, so a panic inside them is contained here and treated as
// a failed extraction rather than taking the process down.
func article(ctx context.Context, page string, u *url.URL) (md string, ok bool) {
	defer func() {
		if recover() != nil {
			md, ok = "", false
		}
	}()
	p := readability.NewParser()
	art, err := p.Parse(strings.NewReader(page), u)
	if err != nil || art.Node == nil {
		return "", false
	}
	out, err := newConverter().ConvertNode(art.Node, converter.WithContext(ctx), converter.WithDomain(u.String()))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

// wholePage converts the entire document (scripts, styles and the head
// are dropped by the converter), keeping tables as markdown tables. If
// conversion fails, the page's visible text is returned instead so the
// model still gets something readable.
func wholePage(ctx context.Context, page string, u *url.URL) (md string) {
	defer func() {
		if recover() != nil {
			md = visibleText(page)
		}
	}()
	out, err := newConverter().ConvertString(page, converter.WithContext(ctx), converter.WithDomain(u.String()))
	if err != nil {
		return visibleText(page)
	}
	return strings.TrimSpace(out)
}

// newConverter builds a converter per call: converters keep an error
// field, and a fresh one keeps concurrent fetches independent.
func newConverter() *converter.Converter {
	return converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
	))
}

// visibleText is the last-resort rendering: the text nodes outside
// script, style and head, whitespace collapsed.
func visibleText(page string) string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return ""
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "head", "noscript", "template":
				return
			}
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return strings.Join(strings.Fields(b.String()), " ")
}
