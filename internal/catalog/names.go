package catalog

import (
	"path/filepath"
	"strings"
)

// The built-in tool names. A prompt may not take one: "run list_prompts"
// would be ambiguous. They are reserved even when a build does not publish
// need_prompt.
const (
	toolListPrompts = "list_prompts"
	toolRunPrompt   = "run_prompt"
	toolCheckRun    = "check_run"
	toolNeedPrompt  = "need_prompt"
)

// IsReserved reports whether name is one of the four built-in tool names.
func IsReserved(name string) bool {
	switch name {
	case toolListPrompts, toolRunPrompt, toolCheckRun, toolNeedPrompt:
		return true
	}
	return false
}

// maxNameLen is the 48-byte cap of ^[a-z][a-z0-9_]{0,47}$.
const maxNameLen = 48

// ValidName reports whether name matches ^[a-z][a-z0-9_]{0,47}$.
func ValidName(name string) bool {
	if name == "" || len(name) > maxNameLen {
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

// brokenSuffix marks a broken placeholder that would otherwise read as a
// name something else answers to.
const brokenSuffix = " (broken)"

// placeholder guards the name a broken entry is listed under: a stem that
// is itself a built-in name is suffixed so no listing shows a prompt that
// seems to be a built-in.
func placeholder(name string) string {
	if IsReserved(name) {
		return name + brokenSuffix
	}
	return name
}

// fileStem is the file name without its last extension; a leading dot
// does not start an extension (".hidden.md" -> ".hidden", ".md" -> ".md").
func fileStem(path string) string {
	base := filepath.Base(path)
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[:i]
	}
	return base
}
