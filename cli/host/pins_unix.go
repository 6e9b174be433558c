//go:build !windows

package host

// readPinsUnlocked: [AddPins] reads the pins before it takes the pins lock.
// A rename over a file another process is reading is atomic on Unix.
const readPinsUnlocked = true
