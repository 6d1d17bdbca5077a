// Package tools owns the live tools a run binds with tools.need: the Tool
// interface the engine calls, the error kinds a tool reports, and the two
// built-in tools, web_fetch and web_search. Hosts register them from
// [tools] in prompts.toml (or always, for the CLI); without that a run has
// none.
//
// web_fetch ([NewWebFetch]) fetches one URL on behalf of a model, which
// means on behalf of whatever text the model last read, so it is built to
// be safe against server-side request forgery by construction rather than
// by URL inspection alone:
//
//   - URL admission parses hosts the way browsers do (the URL Standard):
//     "0177.0.0.1", "2130706433", "127.1", "0x7f.1" and full-width digits
//     are IPv4 literals, refused as such, never names handed to a
//     resolver that would read them as 127.0.0.1.
//   - The address check runs where the connection is made: the
//     transport's DialContext resolves the host itself (no cache, so DNS
//     rebinding fails), drops every address in the built-in table of
//     non-public ranges (IPv4, IPv6, and IPv6 forms embedding IPv4) or in
//     deny_cidr, and dials only the survivors, by address. The single
//     escape hatch is an exact (host, address) pair.
//   - Redirects are followed by the tool, not by net/http: every hop is
//     counted, refused if it downgrades https to http, admitted like the
//     first URL, and dialled through the same check. No cookie jar, no
//     Authorization, no Referer, no ambient proxy.
//   - Bodies are capped after decompression (gzip and brotli are decoded
//     here), content types are routed without sniffing, and HTML becomes
//     markdown by Readability-style article isolation (go-readability)
//     with a whole-page conversion (html-to-markdown) as fallback.
//
// Failures a model can act on (HTTP status, timeout, DNS, content type,
// size, charset, refused redirect, scheme) come back as ordinary
// untrusted tool text; argument errors and policy violations are [*Error]
// with kind [KindInvalidArguments] and end the run. Messages never show a
// blocked address or a URL's userinfo, query or fragment; the injected
// logger gets the detail.
//
// web_search ([NewWebSearch]) owns the tool's side of a search: a closed
// argument schema checked before sending and the mapping of failures to
// tool kinds. The HTTP exchange (POST {base}/tools/web_search, its 30 s
// deadline, 256 KiB reply cap and shape check) is the gateway client's,
// reached through the one-method [Searcher], because gateway is the only
// package that speaks the gateway's contract. The raw reply goes to the
// model as untrusted text.
package tools
