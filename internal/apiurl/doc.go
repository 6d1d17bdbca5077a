// Package apiurl owns the rule for the gateway's API root URL (the
// [gateway].url setting and PROMPTFORGE_GATEWAY_URL): an absolute http or
// https URL with a host, naming only the root, so no userinfo, query or
// fragment.
//
// config checks the setting when prompts.toml loads, and gateway checks
// it again when a client is built (the run command's URL comes from the
// environment, not the file). Both used to write the rule out, with
// different details. It lives in this leaf, not in gateway, because config
// may import no other internal package than leaves; each caller keeps its
// own messages, which operators and tests know, and words the [Problem] this
// package reports.
//
// The rule has two layers because config and gateway apply different
// amounts of it: [CheckShape] is what config refuses at load (blank,
// unparseable, not http(s), no host), and [Check] is the whole API-root rule
// gateway.New enforces. A URL that passes the shape but carries userinfo,
// a query or a fragment loads, and is refused when the gateway client is
// built, as it always was.
package apiurl
