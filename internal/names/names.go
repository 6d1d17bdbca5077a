package names

// The built-in tool names. A prompt may not take one: "run list_prompts"
// would be ambiguous. They are reserved even when a build does not publish
// need_prompt.
const (
	ListPrompts = "list_prompts"
	RunPrompt   = "run_prompt"
	CheckRun    = "check_run"
	NeedPrompt  = "need_prompt"
)

// Reserved returns the four built-in tool names in the order messages list
// them (list_prompts, run_prompt, check_run, need_prompt). The slice is
// new on every call, so a caller may keep or change it.
func Reserved() []string {
	return []string{ListPrompts, RunPrompt, CheckRun, NeedPrompt}
}

// IsReserved reports whether name is one of the four built-in tool names.
func IsReserved(name string) bool {
	switch name {
	case ListPrompts, RunPrompt, CheckRun, NeedPrompt:
		return true
	}
	return false
}

// MaxLen is the 48-byte cap of ^[a-z][a-z0-9_]{0,47}$.
const MaxLen = 48

// ValidName reports whether name matches ^[a-z][a-z0-9_]{0,47}$: a name
// callers type as a tool argument, so a lowercase ASCII identifier.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxLen {
		return false
	}
	if c := name[0]; c < 'a' || c > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}
