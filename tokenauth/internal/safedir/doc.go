// Package safedir opens the directory that holds a file by walking the
// file's path one component at a time from the root, never following a
// symlink.
//
// On Unix every step is an openat(2) relative to the directory opened in the step
// before, with O_NOFOLLOW|O_DIRECTORY, so nothing that is swapped in behind
// the walk's back can redirect it: what the returned [Dir] refers to is the
// directory that was checked, not whatever the path names a moment later.
//
// On Windows the walk is by path (os.Lstat per component, refusing every
// reparse point: symlinks and junctions), missing directories are created
// with an owner-only DACL, and the directory itself must be owned by the
// current user with a DACL that lets nobody else in.
package safedir
