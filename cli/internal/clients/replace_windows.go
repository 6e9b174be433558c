//go:build windows

package clients

import (
	"fmt"
	"time"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// replaceAttempts bounds how often replaceFile tries while the client holds
// its file open; replaceWait is the pause after the first failed try, which
// doubles after each (about 6 s in all).
const (
	replaceAttempts = 8
	replaceWait     = 50 * time.Millisecond
)

// replaceRetried, when set (by tests), is called after each attempt that
// failed because the file was in use, with the attempt's number.
var replaceRetried func(attempt int)

// replaceFile replaces the client's file at path with data, atomically and
// owner-only. A running client may hold its file open without sharing
// delete access, and Windows then refuses the rename over it (a sharing
// violation, or access denied): replaceFile tries again a few times, then
// gives up with the file as it was and says to quit the client.
func replaceFile(path string, data []byte) error {
	wait := replaceWait
	var err error
	for attempt := 1; attempt <= replaceAttempts; attempt++ {
		if err = privatefile.Replace(path, data); err == nil || !inUse(err) {
			return err
		}
		if replaceRetried != nil {
			replaceRetried(attempt)
		}
		if attempt < replaceAttempts {
			time.Sleep(wait)
			wait *= 2
		}
	}
	return fmt.Errorf("%w; a running program (the client?) holds the file open: quit it and run this again (the file was not changed)", err)
}

// inUse reports whether err is Windows refusing to replace a file another
// program holds open.
func inUse(err error) bool { return privatefile.InUse(err) }
