// Package match decides which tool, model or prompt a plain-English need
// refers to. Ranking sits behind the [Ranker] interface; the decision policy
// ([Resolve]: bind, absent, ambiguous, duplicate; [Shortlist] for need_prompt)
// is ranker-agnostic and only its thresholds are calibrated per ranker.
//
// Rankers:
//   - [Lexical] ([NewLexical], the default): BM25-weighted bag-of-words vectors
//     over [Doc.Text], L2-normalised, compared by cosine. Offline and
//     deterministic, but blind to synonyms: "delete" never meets "remove".
//   - [Embedding] ([NewEmbedding]): sentence vectors from an [Embedder] such as
//     the gateway's embeddings endpoint.
//   - [Fallback] ([NewFallback]): embeddings while the embedder answers, the
//     lexical ranker while it does not; a need scored lexically is judged by
//     its policy's [Policy.Lexical] thresholds. One warning per outage; the
//     embedder is retried after [FallbackOptions.RetryAfter].
//
// Policies, calibrated on the fixtures in testdata (CALIBRATION.md has
// the observed scores and the reasoning; TestCalibrationFixtures fails if
// a threshold change breaks any fixture):
//   - [LexicalPolicy], for tools.need: floor 0.5, margin 0.1, duplicate
//     0.9, solo 0.3, top_k 3. Lexical scores spread wider than embedding
//     cosines (a verbatim need scores 0.6–1.0, an unrelated one 0–0.2), so
//     the floor is lower and the margin wider than the reference's.
//   - [LexicalModelPolicy], for models.need: the same with solo 0.1, so a
//     one-model catalog binds any need sharing a word with it.
//   - [LexicalRetrievalPolicy], for need_prompt: floors just above 0 (a
//     score of 0 shares no term), top_k 3 (it only ranks); [RetrievalPolicy]
//     is the reference's floor 0 for embedding rankers.
//   - [ReferencePolicy]: the reference's 0.825 / 0.05 / 0.98 / 0.5 / 3,
//     measured for bge-small-en-v1.5; for the embedding ranker only.
//   - [EmbeddingPolicy], [EmbeddingModelPolicy], [EmbeddingRetrievalPolicy]:
//     the three uses under embeddings (the reference's thresholds, models
//     with solo 0.3, need_prompt floor 0), each with its lexical policy as
//     Lexical. The binding evaluation (eval_test.go, testdata/eval,
//     docs/benchmarks.md) calibrates them for a given model.
//
// Build docs with [ToolDoc], [ModelDoc] and [PromptDoc] so every caller ranks
// the same text. Index once per catalog; Resolve and Shortlist only score
// the need (microseconds for tens of docs).
//
// Goroutines: none; every ranker and index is safe for concurrent use.
package match
