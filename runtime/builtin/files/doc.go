// Package files implements the file tools: read, write, edit, apply_patch,
// glob, grep and list.
//
//	for _, t := range files.Tools(&files.Options{WorkDirs: []string{"/home/me/project"}}) {
//		if err := reg.Register(t); err != nil {
//			return err
//		}
//	}
//
// Every path, for reading as well as writing, is confined to the working
// directories of the call (tool.CallInfo.WorkDirs, else
// Options.WorkDirs): it is resolved with symlinks followed
// (authz.ResolvePath) and refused with PATH_OUTSIDE_WORKDIRS when it leaves
// them. Relative paths start at the first working directory, and results
// show paths relative to it. Walks (glob, grep) never follow directory
// symlinks, skip .git, and grep reads a file symlink only when its target
// is inside the working directories.
//
// Writes are atomic (a temporary file renamed into place). apply_patch is
// all or nothing: it parses the whole "*** Begin Patch" envelope, computes
// every new file in memory, stages them, and renames them into place with
// the originals kept as backups until every rename succeeded.
package files
