// Package embedcache keeps embedding vectors by text, so a restart or a
// catalog reload re-embeds only the texts that changed
// (gateway-picker-webfetch §2.9).
//
// A [Cache] wraps an embedder (the gateway's embeddings call for one
// model) and is itself one: each call embeds only the texts it has not
// seen, in one batch, and answers the rest from memory. Vectors are keyed
// by the SHA-256 of the text and belong to one model id; the memory holds
// at most [Options.MaxEntries] of them, the oldest forgotten first.
//
// On disk ([Options.Path], prompts.toml's [retrieval] cache) the vectors
// are one gob file that names its format and model. It is read once, by
// [New]: a file that cannot be read, is corrupt, or holds another model's
// vectors is ignored with a log line, never fatal, and replaced by the
// next write; within a file that is read, a vector no embedder returns
// (empty, not finite, or of another length than most) is dropped with a
// warning and embedded again when needed. Writes are atomic (a temporary file in the same directory,
// synced, then renamed), so a crash leaves the old file or the new one.
// A call that embedded new vectors for two or more texts (an index of
// prompts, tools or models) writes the file; one-text calls (needs) ride
// along with the next write or with [Cache.Close], so a stream of novel
// need_prompt capabilities does not rewrite the file each time.
//
// Goroutines: none. Safe for concurrent use.
package embedcache
