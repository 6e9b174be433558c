// Package files implements the file tools: read, write, edit, apply_patch,
// glob, grep and list.
//
//	for _, t := range files.Tools(&files.Options{WorkDirs: []string{"/home/me/project"}}) {
//		if err := reg.Register(t); err != nil {
//			return err
//		}
//	}
//
// # Confinement
//
// Every path, for reading as well as writing, is confined to the working
// directories of the call (its speaker's, from tool.CallInfo, else
// Options.WorkDirs)
// by authz.Confine, the same resolution the gate checks with: symlinks
// followed, refused with PATH_OUTSIDE_WORKDIRS when it leaves them.
// Relative paths start at the first working directory, and results show
// paths relative to it.
//
// The tools then work through an os.Root opened on the working directory
// that holds the path, so the kernel refuses any step out of it at the
// moment of each system call, whatever symlink is swapped in after the
// check. A write also opens the target's directory one component at a
// time and requires each to be the real directory it was a moment
// before, so a swapped-in symlink cannot redirect it into .git or the
// state directory either; the new content is staged in that directory
// and renamed onto the name (a rename replaces a symlink, never follows
// it). Every write is checked with the call's authz.Speaker.WriteTarget,
// the gate's own answer: the state directory (the call's, else
// Options.StateDir) is refused with PATH_PROTECTED for every speaker,
// and dangerous files and directories too, except for the owner's
// console (source cli) when an allow rule names that exact path.
//
// A refusal names the path only as the call gave it, with one fixed
// phrase ("is outside the working directories", "cannot be resolved",
// ...); the full resolution goes to Options.Logger at debug level. Walks
// (glob, grep) never follow directory symlinks and skip .git; grep reads
// a file symlink only when its target is inside the same working
// directory.
//
// Writes are atomic (a temporary file renamed into place). apply_patch is
// all or nothing: it parses the whole "*** Begin Patch" envelope, computes
// every new file in memory, stages them, and renames them into place with
// the originals kept as backups until every rename succeeded.
package files
