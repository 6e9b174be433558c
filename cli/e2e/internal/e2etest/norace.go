//go:build !race

package e2etest

// raceEnabled: the tests run without -race, so the binary is built without it.
const raceEnabled = false
