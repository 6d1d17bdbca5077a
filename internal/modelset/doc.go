// Package modelset holds the model list the gateway serves, for every run
// of the process, and fetches it again when it may be out of date.
//
// Why: IDEs start MCP servers before the model server (Ollama, llama.cpp)
// is up, and users pull models while the server runs. A list fetched once
// at boot would leave model prompts broken until a restart. A [Set] keeps
// the last good list and fetches again
//
//   - when a run's model binding finds no model and the list may be out of
//     date ([Set.AfterMiss]): the last fetch failed and its backoff has
//     passed, it listed no models, or it succeeded longer ago than
//     [Options.Interval];
//   - whenever its owner asks ([Set.Refresh]): app does so at boot, and
//     its refresh goroutine ([Set.Run]) after every catalog reload
//     ([Set.Kick], so the watcher never waits on the network) and on the
//     [gateway].refresh period.
//
// At most one fetch is in flight: whoever asks while one runs waits for
// it instead of starting another, so a burst of binding misses costs one
// request. A failed fetch keeps the last good list; the failure is kept
// beside it ([Snapshot.Problem]) so a binding that finds nothing can say
// the model server is not reachable rather than that no model matches.
//
// A [Snapshot] is immutable, like a catalog generation: a run takes one at
// its start and binds against it; only a binding miss may swap it, once.
//
// It is its own package, below engine and server, because both read it
// and app owns it; it imports only gateway (for the model type and the
// error kinds) and redact.
//
// Goroutines: none of its own. [Set.Run] runs on its caller's goroutine
// (app.Boot starts one and stops it by cancelling its context when serving
// ends); a fetch runs on the goroutine of whoever started it.
package modelset
