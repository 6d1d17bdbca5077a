// Package secret owns the [Secret] type: a credential that every way Go
// renders a value (fmt verbs, slog, encoding.TextMarshaler and so JSON, TOML
// and YAML) prints as "redacted", so a key cannot leak through a log line or
// a debug dump, and [Secret.Reveal] is the one deliberate way to read it.
//
// It is a leaf so that config (prompts.toml's api_key settings) and
// gateway (the bearer key it sends) share one type: the gateway used to
// hold its key as a plain string and re-implement the redaction.
package secret
