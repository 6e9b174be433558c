// Package safedir opens the directory that holds a file by walking the
// file's path one component at a time from the root, never following a
// symlink.
//
// On Unix every step is an openat(2) relative to the directory opened in the step
// before, with O_NOFOLLOW|O_DIRECTORY, so nothing that is swapped in behind
// the walk's back can redirect it: what the returned [Dir] refers to is the
// directory that was checked, not whatever the path names a moment later.
//
// On Windows every step is an NtCreateFile relative to the handle of the
// directory opened in the step before (FILE_OPEN_REPARSE_POINT, a reparse
// point refused by its attribute: symlinks and junctions), and every handle
// is held without delete sharing, with list access so that the share mode
// binds, until [Dir.Close]: none of the directories can be renamed or
// replaced meanwhile, and at the end the path must still name the
// directory held. Missing directories are created with an owner-only DACL,
// and the directory itself must be owned by the current user with a DACL
// that lets nobody else in.
package safedir
