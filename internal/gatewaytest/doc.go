// Package gatewaytest is a scripted OpenAI-shaped gateway for tests: a real
// HTTP server on 127.0.0.1 that speaks the gateway contract
// (GET /v1/models, POST /v1/chat/completions, POST /v1/tools/web_search,
// GET /health) and answers chat requests from a script.
//
// It exists so every package that needs a model tests against real HTTP
// instead of a mock: the gateway client's encoding, auth, timeouts and body
// caps are exercised in every test that runs a prompt. Replies are scripted
// in order ([Server.Enqueue]) or computed ([Server.Respond]); failures are
// replies too ([Status], [Malformed], [Hang]), and a [Gate] lets a test hold
// a request at the server until it says so, which is how admission,
// cancellation and in-flight limits are tested without sleeping.
//
// [WireShapes] are replies recorded from real model servers (Ollama,
// llama.cpp, vLLM, LiteLLM, OpenAI; testdata/wire-shapes/README.md names
// the source of each); [Recorded.Reply] serves one verbatim, with its
// status, so a test can replay what a real server sends.
//
// Like the real gateway it checks the bearer token (401 envelope), the
// Content-Type (415) and the request shape (400 malformed_request), so a
// client that sends something the real gateway would refuse fails here
// too.
package gatewaytest
