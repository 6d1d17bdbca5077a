//go:build !windows

package config

// hasVolume reports a drive or UNC prefix; on Unix "C:\x" is an ordinary
// relative file name.
func hasVolume(string) bool { return false }
