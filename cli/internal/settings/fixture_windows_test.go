//go:build windows

package settings

import (
	"bytes"
	"path/filepath"
)

// fixtureData is a testdata config.json as this system takes it: on
// Windows its absolute paths (/tmp/...) are not absolute, and become C:\tmp\...
func fixtureData(data []byte) []byte {
	return bytes.ReplaceAll(data, []byte(`"/tmp/`), []byte(`"C:\\tmp\\`))
}

// fixturePath is an absolute path of the fixtures (/tmp/...) as this
// system spells it.
func fixturePath(p string) string { return `C:` + filepath.FromSlash(p) }
