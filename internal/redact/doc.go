// Package redact owns how text that may hold a secret or was written by a
// remote party is made safe to put in a message or a log line: URLs lose
// their userinfo, query and fragment; untrusted text loses control
// characters and is capped; an echoed credential is replaced by a marker.
//
// web_fetch (tools) and the gateway client (gateway) used to carry their
// own redactors with different rules and spellings. It is a leaf so that
// both, and config, can share the one.
package redact
