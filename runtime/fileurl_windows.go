//go:build windows

package runtime

import (
	"net/url"
	"path/filepath"
)

// fileURLPath is the file a file:// URL names: file:///C:/dir/f.json is
// C:\dir\f.json (the path's leading slash goes before a drive letter).
func fileURLPath(u *url.URL) string {
	p := u.Path
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:]
	}
	return filepath.FromSlash(p)
}
