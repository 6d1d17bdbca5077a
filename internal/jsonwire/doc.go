// Package jsonwire owns the one JSON encoding the server puts on every
// wire it writes (MCP results, run records, gateway requests): compact,
// with <, > and & left as they are, and without the newline
// json.Encoder appends.
//
// Prompt names, values and chat messages are prose and code; escaping
// <, > and & would only make them harder to read and make the wire differ
// from the reference's for no client's benefit. encoding/json's Marshal
// always escapes them, so the Encoder dance was written out four times;
// this leaf holds it once for server, runs and gateway.
package jsonwire
