//go:build !race

package e2e

// raceEnabled: the tests run without -race, so the binary is built without it.
const raceEnabled = false
