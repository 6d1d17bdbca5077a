// Package names owns the rules for the names callers type: which strings
// may name a prompt (^[a-z][a-z0-9_]{0,47}$) and which four are the
// server's own tools and so can never name one.
//
// The rules used to be written out in config (the [prompts.NAME] key
// check), catalog (file stems and front-matter names) and server (the tool
// definitions), kept equal by a test. They live here, below all three and
// importing nothing internal, so each of them reads the one copy.
package names
