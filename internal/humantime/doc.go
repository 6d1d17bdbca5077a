// Package humantime reads and writes durations the way prompts.toml and
// the reference server spell them ("30s", "1h 30m", "500ms"; humantime 2's
// syntax, mcp-server §2.4), rather than Go's "1h30m0s".
//
// config parses the file's durations with [Parse]; the server and the
// catalog render durations in messages and logs with [Format], so an
// operator sees a value in the spelling they would write in the file.
// It is a leaf so that every one of them can import it: the formatter
// used to live in config, and the catalog kept its own copy.
package humantime
