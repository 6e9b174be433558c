//go:build unix

package tokenauth

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/openprogram/openprogram/tokenauth/internal/safedir"
)

// rotateTo is [RotateTo] after its check of token.
func rotateTo(path, token string) error {
	dir, name, err := safedir.Open(path, false)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRotate, err)
	}
	defer dir.Close()
	target := filepath.Join(dir.Path(), name)

	var st unix.Stat_t
	if err := unix.Fstatat(dir.Fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%w: %q does not exist; %s first", ErrRotate, target, tokenKind.hint)
		}
		return fmt.Errorf("%w: %q: inspect: %w", ErrRotate, target, err)
	}
	if problem, fix := tokenKind.checkFile(&st); problem != "" {
		return fmt.Errorf("%w: %q: file %s (%s)", ErrRotate, target, problem, fix)
	}

	return publish(tokenKind, dir, name, target, token, true)
}

// createSecret makes 32 random bytes and publishes them at path in unpadded
// base64url, by the procedure [Create] documents. It returns the raw bytes.
func createSecret(k *secretKind, path string) ([]byte, error) {
	dir, name, err := safedir.Open(path, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", k.create, err)
	}
	defer dir.Close()
	target := filepath.Join(dir.Path(), name)

	var st unix.Stat_t
	switch err := unix.Fstatat(dir.Fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		return nil, k.existsError(target)
	case errors.Is(err, unix.ENOENT):
	default:
		return nil, k.createError(target, fmt.Errorf("inspect: %w", err))
	}

	raw, err := newSecret()
	if err != nil {
		return nil, k.createError(target, err)
	}
	text := base64.RawURLEncoding.EncodeToString(raw)
	if err := publish(k, dir, name, target, text, false); err != nil {
		clear(raw)
		return nil, err
	}
	return raw, nil
}

// publish writes token to a temporary file in dir and links it to name, or
// with replace renames it over name. Whatever fails, it leaves behind no
// file it made; errors wrap k.create, or k.replace with replace.
func publish(k *secretKind, dir *safedir.Dir, name, target, token string, replace bool) (err error) {
	dfd := dir.Fd()
	sentinel := k.create
	if replace {
		sentinel = k.replace
	}
	fail := func(cause error) error { return fmt.Errorf("%w: %q: %w", sentinel, target, cause) }
	suffix := make([]byte, 8)
	if _, err := rand.Read(suffix); err != nil {
		return fail(fmt.Errorf("read random bytes: %w", err))
	}
	tmp := ".tokenauth-" + hex.EncodeToString(suffix) + ".tmp"

	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, fileMode)
	if err != nil {
		return fail(fmt.Errorf("create temporary file: %w", err))
	}
	var mine unix.Stat_t // the inode we made; nothing else is ever removed
	tmpLinked, published := true, false
	defer func() {
		if err != nil {
			if published {
				removeIfSame(dfd, name, &mine)
			}
			if tmpLinked {
				_ = unix.Unlinkat(dfd, tmp, 0)
			}
			_ = unix.Fsync(dfd)
		}
		_ = unix.Close(fd)
	}()

	// The mode passed to open is reduced by the umask; the promise is 0600.
	if err := unix.Fchmod(fd, fileMode); err != nil {
		return fail(fmt.Errorf("set mode of temporary file: %w", err))
	}
	if err := writeAll(fd, []byte(token)); err != nil {
		return fail(fmt.Errorf("write temporary file: %w", err))
	}
	if err := unix.Fsync(fd); err != nil {
		return fail(fmt.Errorf("sync temporary file: %w", err))
	}
	if err := unix.Fstat(fd, &mine); err != nil {
		return fail(fmt.Errorf("inspect temporary file: %w", err))
	}

	if testHookBeforeLink != nil {
		testHookBeforeLink(target)
	}
	if replace {
		if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
			return fail(fmt.Errorf("rename temporary file: %w", err))
		}
		published, tmpLinked = true, false
	} else {
		if err := unix.Linkat(dfd, tmp, dfd, name, 0); err != nil {
			if errors.Is(err, unix.EEXIST) {
				return k.existsError(target)
			}
			return fail(fmt.Errorf("link temporary file: %w", err))
		}
		published = true
		if err := unix.Fsync(dfd); err != nil {
			return fail(fmt.Errorf("sync directory: %w", err))
		}
		if err := unix.Unlinkat(dfd, tmp, 0); err != nil {
			return fail(fmt.Errorf("remove temporary file: %w", err))
		}
		tmpLinked = false
	}
	if err := unix.Fsync(dfd); err != nil {
		return fail(fmt.Errorf("sync directory: %w", err))
	}

	if testHookAfterPublish != nil {
		testHookAfterPublish(target)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fail(fmt.Errorf("inspect published file: %w", err))
	}
	if st.Dev != mine.Dev || st.Ino != mine.Ino {
		return fail(errors.New("published file was replaced by another file"))
	}
	if problem, _ := k.checkFile(&st); problem != "" {
		return fail(fmt.Errorf("published file %s; removed it again", problem))
	}
	if st.Size != int64(len(token)) {
		return fail(fmt.Errorf("published file is %d bytes, want %d; removed it again", st.Size, len(token)))
	}
	return nil
}

// removeIfSame unlinks name from dfd if it is still the inode in want, so a
// file someone else put there is never removed.
func removeIfSame(dfd int, name string, want *unix.Stat_t) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return
	}
	if st.Dev == want.Dev && st.Ino == want.Ino {
		_ = unix.Unlinkat(dfd, name, 0)
	}
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("short write")
		}
		b = b[n:]
	}
	return nil
}

// checkFile applies the rules every token file must meet: a regular file,
// owned by the current user, mode exactly 0600. If one is broken it says
// which, in words that follow "file", and how to fix it; else both are "".
func (k *secretKind) checkFile(st *unix.Stat_t) (problem, fix string) {
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return "is a symlink", "use a path without symlinks"
	case unix.S_IFDIR:
		return "is a directory, not a regular file", "remove it and " + k.hint
	case unix.S_IFIFO:
		return "is a FIFO, not a regular file", "remove it and " + k.hint
	default:
		return fmt.Sprintf("is not a regular file (type %#o)", uint32(st.Mode)&unix.S_IFMT), "remove it and " + k.hint
	}
	if euid := os.Geteuid(); int64(st.Uid) != int64(euid) {
		return fmt.Sprintf("is owned by uid %d, not by the current user (uid %d)", st.Uid, euid),
			"run openprogram as the user who created the file"
	}
	if perm := uint32(st.Mode) & 0o7777; perm != fileMode {
		return fmt.Sprintf("has mode %04o, want 0600", perm), "chmod 600 the file"
	}
	return "", ""
}

// readSecretFile returns the whole content of the secret file at path, after
// checking every rule, and the file's absolute path; or an error wrapping
// k.unavailable.
func readSecretFile(k *secretKind, path string) ([]byte, string, error) {
	dir, name, err := safedir.Open(path, false)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", k.unavailable, err)
	}
	defer dir.Close()
	target := filepath.Join(dir.Path(), name)

	// A Rotate between the look and the open swaps the inode, and one
	// during the read can show as a change of the file read: the unlink
	// that replaces it moves its ctime an instant before its link count.
	// Either way the whole read is repeated, a bounded number of times; a
	// file that keeps changing fails.
	for attempt := 1; ; attempt++ {
		data, err := k.readOnce(dir.Fd(), name, target)
		if err == nil {
			return data, target, nil
		}
		if !errors.Is(err, errReplaced) && !errors.Is(err, errChanged) || attempt == 3 {
			return nil, "", err
		}
	}
}

// readOnce looks at, opens and reads the secret file name in dfd once,
// checking that nothing changed it while it was read.
func (k *secretKind) readOnce(dfd int, name, target string) ([]byte, error) {
	var st unix.Stat_t
	fd, err := k.lookAndOpen(dfd, name, target, &st)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if st.Size == 0 {
		return nil, k.unavailableError(target, fmt.Errorf("file is empty (remove it and %s)", k.hint))
	}
	if st.Size > k.limit() {
		return nil, k.unavailableError(target, fmt.Errorf("file is %d bytes, more than the %d allowed", st.Size, k.limit()))
	}

	buf := make([]byte, k.limit()+1)
	n, err := readFull(fd, buf)
	if err != nil {
		clear(buf)
		return nil, k.unavailableError(target, fmt.Errorf("read file: %w", err))
	}
	if testHookAfterRead != nil {
		testHookAfterRead(target)
	}
	var post unix.Stat_t
	if err := unix.Fstat(fd, &post); err != nil {
		clear(buf)
		return nil, k.unavailableError(target, fmt.Errorf("inspect open file: %w", err))
	}
	// A rename over the file (Rotate) unlinks this inode, which moves its
	// ctime but not its bytes: a ctime change counts only when the link
	// count is what it was (and then the read is repeated: see above).
	if int64(n) != st.Size || post.Size != st.Size || post.Ino != st.Ino || post.Dev != st.Dev ||
		post.Mtim != st.Mtim || (post.Ctim != st.Ctim && post.Nlink == st.Nlink) {
		clear(buf)
		return nil, k.unavailableError(target, errChanged)
	}
	return buf[:n], nil
}

// errChanged reports a secret file that changed while it was read.
var errChanged = errors.New("file changed while being read; try again")

var errReplaced = errors.New("file was replaced while being opened")

// lookAndOpen checks the file name in dfd, opens it without following a
// link or blocking, and checks that the open file is the one it looked at,
// filling st. An error wraps k.unavailable (and errReplaced when the file
// was swapped between the look and the open).
func (k *secretKind) lookAndOpen(dfd int, name, target string, st *unix.Stat_t) (int, error) {
	// Look before opening, so a FIFO or device is never opened at all.
	var pre unix.Stat_t
	if err := unix.Fstatat(dfd, name, &pre, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, k.unavailableError(target, fmt.Errorf("file does not exist (%s): %w", k.hint, err))
		}
		return -1, k.unavailableError(target, fmt.Errorf("inspect file: %w", err))
	}
	if problem, fix := k.checkFile(&pre); problem != "" {
		return -1, k.fileError(target, problem, fix)
	}

	// O_NONBLOCK: should a FIFO be swapped in after the look, open and read
	// return at once instead of waiting for a writer.
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, k.unavailableError(target, fmt.Errorf("open file: %w", err))
	}
	if err := unix.Fstat(fd, st); err != nil {
		unix.Close(fd)
		return -1, k.unavailableError(target, fmt.Errorf("inspect open file: %w", err))
	}
	if st.Dev != pre.Dev || st.Ino != pre.Ino {
		unix.Close(fd)
		return -1, k.unavailableError(target, errReplaced)
	}
	if problem, fix := k.checkFile(st); problem != "" {
		unix.Close(fd)
		return -1, k.fileError(target, problem, fix)
	}
	return fd, nil
}

// readFull reads until EOF or until buf is full, whichever comes first.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// writeSecret creates or replaces the secret file at path with text, by
// the procedure [WriteAnchor] documents.
func writeSecret(k *secretKind, path string, text []byte) error {
	dir, name, err := safedir.Open(path, true)
	if err != nil {
		return fmt.Errorf("%w: %w", k.replace, err)
	}
	defer dir.Close()
	return publish(k, dir, name, filepath.Join(dir.Path(), name), string(text), true)
}
