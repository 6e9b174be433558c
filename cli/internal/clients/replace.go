package clients

import (
	"errors"
	"fmt"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// replaceFile replaces the client's file at path with data, atomically and
// owner-only. On Windows a running client may hold its file open, and
// privatefile retries the rename over it for a bounded time (the one retry
// of a replace); when it gives up, the error says to quit the client.
// A file that cannot be replaced for good fails at once with privatefile's
// own advice.
func replaceFile(path string, data []byte) error {
	err := privatefile.Replace(path, data)
	if errors.Is(err, privatefile.ErrInUse) {
		return fmt.Errorf("%w; if it is the client, quit it (the file was not changed)", err)
	}
	return err
}
