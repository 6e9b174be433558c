//go:build windows

package host

// readPinsUnlocked: on Windows [AddPins] reads the pins under the pins lock
// only. A reader holding the file open makes the writer's rename over it
// fail (access denied), so a read outside the lock could fail a concurrent
// start's write.
const readPinsUnlocked = false
