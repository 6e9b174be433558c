//go:build !windows

package settings

// fixtureData is a testdata config.json as this system takes it: on Unix
// as it is.
func fixtureData(data []byte) []byte { return data }

// fixturePath is an absolute path of the fixtures (/tmp/...) as this
// system spells it.
func fixturePath(p string) string { return p }
