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
// ranker. It differs from LexicalPolicy only in a lower solo floor: model
// needs are vague ("a general assistant model…") and often share only a
// word or two with the one model a catalog offers, and binding the only
// model is what an author expects, whereas a lone tool sharing one word
// with a need is usually the wrong tool.
func LexicalModelPolicy() Policy {
	p := LexicalPolicy()
	p.SoloFloor = 0.1
	return p
}

// RetrievalPolicy is need_prompt's policy: it only ranks, so the floor is
// 0 and it lists the best three prompts.
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
