//go:build unix

package runtime

import "net/url"

// fileURLPath is the file a file:// URL names: its path.
func fileURLPath(u *url.URL) string { return u.Path }
