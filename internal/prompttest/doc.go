// Package prompttest runs prompt tests: a prompt, its arguments, the
// model replies scripted in order, and expectations on what the run
// returned, stored and sent (docs/testing-prompts.md is the format).
//
// It exists so an author can pin a prompt's behaviour in CI without a
// live model. Each test runs the real engine against the project's own
// scripted gateway (internal/gatewaytest), started in-process on
// loopback for that test and closed when it ends: no model, no network
// beyond 127.0.0.1, deterministic (fanout arms run one at a time so
// scripted replies are taken in a fixed order).
//
// Floor: beside server (4), under app; it imports engine, gateway,
// prompt, store, tools and gatewaytest. Discovery from a prompts.toml is
// app's (it owns translating the configuration), which hands this
// package the prompt files it found.
//
// Goroutines: none of its own. Each test's scripted gateway serves on
// net/http's goroutines and is closed, with them, before the test's
// result is reported.
package prompttest
