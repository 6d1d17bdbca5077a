package match

// LexicalPolicy is the policy for tools.need under the lexical ranker.
// The values were chosen on the fixtures in testdata; CALIBRATION.md
// lists the scores they separate and why each value sits where it does.
func LexicalPolicy() Policy {
	return Policy{
		SimilarityFloor:    0.5,
		Margin:             0.1,
		DuplicateThreshold: 0.9,
		SoloFloor:          0.3,
		TopK:               3,
	}
}

// LexicalModelPolicy is the policy for models.need under the lexical
// ranker. It differs from [LexicalPolicy] only in a lower solo floor: model
// needs are vague ("a general assistant model…") and often share only a
// word or two with the one model a catalog offers, and binding the only
// model is what an author expects, whereas a lone tool sharing one word
// with a need is usually the wrong tool.
func LexicalModelPolicy() Policy {
	p := LexicalPolicy()
	p.SoloFloor = 0.1
	return p
}

// LexicalRetrievalPolicy is need_prompt's policy over the lexical ranker:
// it only ranks, and lists the best three prompts. Its floors sit just above
// 0 rather than at RetrievalPolicy's 0: a lexical score of exactly 0 means
// the capability shares no term with a prompt, and listing such prompts
// would hand the caller arbitrary names in catalog order.
func LexicalRetrievalPolicy() Policy {
	p := RetrievalPolicy()
	p.SimilarityFloor = 1e-6
	p.SoloFloor = 1e-6
	return p
}

// RetrievalPolicy is need_prompt's policy for embedding rankers, as the
// reference has it: it only ranks, so the floor is 0 (negative cosines are
// withheld) and it lists the best three prompts.
func RetrievalPolicy() Policy {
	p := LexicalPolicy()
	p.SimilarityFloor = 0
	p.TopK = 3
	return p
}

// ReferencePolicy is the reference implementation's default policy,
// measured for a bge-small-en-v1.5-class sentence embedder (CLS pooling,
// cosine). It suits an embedding ranker serving that model; its floor is
// far too strict for lexical scores.
func ReferencePolicy() Policy {
	return Policy{
		SimilarityFloor:    0.825,
		Margin:             0.05,
		DuplicateThreshold: 0.98,
		SoloFloor:          0.5,
		TopK:               3,
	}
}

// EmbeddingPolicy is tools.need's policy under an embedding ranker,
// with LexicalPolicy for needs scored while the embedder is down. Its
// thresholds are the reference's (measured for bge-small-en-v1.5): an
// operator whose model scores on another scale calibrates its own with
// the evaluation benchmark (docs/benchmarks.md, make eval-binding) and
// sets them in [retrieval].
func EmbeddingPolicy() Policy {
	p := ReferencePolicy()
	lex := LexicalPolicy()
	p.Lexical = &lex
	return p
}

// EmbeddingModelPolicy is models.need's policy under an embedding ranker:
// EmbeddingPolicy with the solo floor lowered as LexicalModelPolicy
// lowers it (binding the only model to a vague need is what an author
// expects), and LexicalModelPolicy while the embedder is down.
func EmbeddingModelPolicy() Policy {
	p := ReferencePolicy()
	p.SoloFloor = 0.3
	lex := LexicalModelPolicy()
	p.Lexical = &lex
	return p
}

// EmbeddingRetrievalPolicy is need_prompt's policy under an embedding
// ranker: RetrievalPolicy, with LexicalRetrievalPolicy while the
// embedder is down.
func EmbeddingRetrievalPolicy() Policy {
	p := RetrievalPolicy()
	lex := LexicalRetrievalPolicy()
	p.Lexical = &lex
	return p
}
