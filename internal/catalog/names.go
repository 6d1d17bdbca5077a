package catalog

import (
	"path/filepath"
	"strings"

	"github.com/promptforge-go/promptforge/internal/names"
)

// brokenSuffix marks a broken placeholder that would otherwise read as a
// name something else answers to.
const brokenSuffix = " (broken)"

// placeholder guards the name a broken entry is listed under: a stem that
// is itself a built-in name is suffixed so no listing shows a prompt that
// seems to be a built-in.
func placeholder(name string) string {
	if names.IsReserved(name) {
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
