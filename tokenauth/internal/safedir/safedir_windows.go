//go:build windows

package safedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// Dir is a directory that passed the checks of [Open].
type Dir struct {
	path string
}

// Path returns the absolute, cleaned path the directory was opened by.
func (d *Dir) Path() string { return d.path }

// Close does nothing on Windows; it is there so callers read alike.
func (d *Dir) Close() error { return nil }

// Open makes path absolute and clean, then checks the directory that holds
// its last element and returns it with that element's name.
//
// Every component below the volume root down to that directory must be a
// real directory: a symlink, junction or other reparse point anywhere is an
// error. The directory itself must be owned by the current user and its
// DACL must let nobody but that user and SYSTEM in.
//
// With create, missing directories are made one at a time with an
// owner-only DACL. Without it, a missing directory is an error that wraps
// io/fs.ErrNotExist.
func Open(path string, create bool) (*Dir, string, error) {
	if path == "" {
		return nil, "", errors.New("path is empty")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return nil, "", errors.New("path contains a NUL byte")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", fmt.Errorf("make %q absolute: %w", path, err)
	}
	parent, name := filepath.Split(abs)
	if name == "" {
		return nil, "", fmt.Errorf("path %q names the root directory, not a file", abs)
	}
	vol := filepath.VolumeName(abs)
	cur := vol + `\`
	rel := strings.Trim(parent[len(vol):], `\`)
	if rel != "" {
		for _, comp := range strings.Split(rel, `\`) {
			cur = filepath.Join(cur, comp)
			if err := checkChild(cur, create); err != nil {
				return nil, "", err
			}
		}
	}
	d, err := os.Open(cur)
	if err != nil {
		return nil, "", fmt.Errorf("open directory %q: %w", cur, err)
	}
	defer d.Close()
	if err := privatefile.CheckPrivate(d); err != nil {
		return nil, "", fmt.Errorf("directory %q is open to others (%w); use a directory of your own, or run %s", cur, err, privatefile.RestrictCommand(cur))
	}
	return &Dir{path: cur}, name, nil
}

// checkChild requires full to be a real directory, creating it first when
// asked to and it is missing.
func checkChild(full string, create bool) error {
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) && create {
		if merr := privatefile.Mkdir(full); merr != nil && !errors.Is(merr, fs.ErrExist) {
			return fmt.Errorf("create directory %q: %w", full, merr)
		}
		fi, err = os.Lstat(full)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory %q does not exist: %w", full, err)
	}
	if err != nil {
		return fmt.Errorf("open directory %q: %w", full, err)
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return fmt.Errorf("path component %q is a symlink; use a path without symlinks", full)
	}
	if !fi.IsDir() {
		return fmt.Errorf("path component %q is not a directory", full)
	}
	return nil
}
