//go:build !windows

package clients

import "github.com/openprogram/openprogram/internal/privatefile"

// replaceFile replaces the client's file at path with data, atomically and
// owner-only. On Unix a rename never waits for the client to close the file.
func replaceFile(path string, data []byte) error {
	return privatefile.Replace(path, data)
}
