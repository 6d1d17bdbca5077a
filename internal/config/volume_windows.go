//go:build windows

package config

import "path/filepath"

// hasVolume reports a drive ("C:") or UNC / verbatim ("\\?\") prefix.
func hasVolume(p string) bool { return filepath.VolumeName(p) != "" }
