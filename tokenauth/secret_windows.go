//go:build windows

package tokenauth

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/tokenauth/internal/safedir"
)

// On Windows the secret files follow the same procedures as on Unix, by
// path rather than by descriptor: the file is created with an owner-only
// DACL (privatefile.Create: CREATE_NEW, never through a reparse point),
// published with a hard link (never replacing) or a rename (Rotate,
// WriteAnchor), and every open refuses a reparse point and a DACL that lets
// anyone but the user and SYSTEM in.

// createSecret makes 32 random bytes and publishes them at path in unpadded
// base64url, by the procedure [Create] documents. It returns the raw bytes.
func createSecret(k *secretKind, path string) ([]byte, error) {
	dir, name, err := safedir.Open(path, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", k.create, err)
	}
	defer dir.Close()
	target := filepath.Join(dir.Path(), name)
	switch _, err := os.Lstat(target); {
	case err == nil:
		return nil, k.existsError(target)
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, k.createError(target, fmt.Errorf("inspect: %w", err))
	}
	raw, err := newSecret()
	if err != nil {
		return nil, k.createError(target, err)
	}
	if err := publish(k, dir.Path(), target, base64.RawURLEncoding.EncodeToString(raw), false); err != nil {
		clear(raw)
		return nil, err
	}
	return raw, nil
}

// rotateTo is [RotateTo] after its check of token.
func rotateTo(path, token string) error {
	dir, name, err := safedir.Open(path, false)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRotate, err)
	}
	defer dir.Close()
	target := filepath.Join(dir.Path(), name)
	f, _, problem, fix, err := openSecret(target)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %q does not exist; %s first", ErrRotate, target, tokenKind.hint)
	}
	if err != nil {
		return fmt.Errorf("%w: %q: inspect: %w", ErrRotate, target, err)
	}
	f.Close()
	if problem != "" {
		return fmt.Errorf("%w: %q: file %s (%s)", ErrRotate, target, problem, fix)
	}
	return publish(tokenKind, dir.Path(), target, token, true)
}

// writeSecret creates or replaces the secret file at path with text, by
// the procedure [WriteAnchor] documents.
func writeSecret(k *secretKind, path string, text []byte) error {
	dir, name, err := safedir.Open(path, true)
	if err != nil {
		return fmt.Errorf("%w: %w", k.replace, err)
	}
	defer dir.Close()
	return publish(k, dir.Path(), filepath.Join(dir.Path(), name), string(text), true)
}

// publish writes token to an owner-only temporary file in dir and links it
// to target, or with replace renames it over target. Whatever fails, it
// leaves behind no file it made; errors wrap k.create, or k.replace with
// replace.
func publish(k *secretKind, dir, target, token string, replace bool) (err error) {
	sentinel := k.create
	if replace {
		sentinel = k.replace
	}
	fail := func(cause error) error { return fmt.Errorf("%w: %q: %w", sentinel, target, cause) }
	suffix := make([]byte, 8)
	if _, err := rand.Read(suffix); err != nil {
		return fail(fmt.Errorf("read random bytes: %w", err))
	}
	tmp := filepath.Join(dir, ".tokenauth-"+hex.EncodeToString(suffix)+".tmp")
	f, err := privatefile.Create(tmp)
	if err != nil {
		return fail(fmt.Errorf("create temporary file: %w", err))
	}
	var mine fs.FileInfo // the file we made; nothing else is ever removed
	tmpLinked, published := true, false
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			if published && mine != nil {
				if fi, lerr := os.Lstat(target); lerr == nil && os.SameFile(fi, mine) {
					_ = os.Remove(target)
				}
			}
			if tmpLinked {
				_ = os.Remove(tmp)
			}
		}
	}()
	if _, err := f.Write([]byte(token)); err != nil {
		return fail(fmt.Errorf("write temporary file: %w", err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("sync temporary file: %w", err))
	}
	if mine, err = f.Stat(); err != nil {
		return fail(fmt.Errorf("inspect temporary file: %w", err))
	}
	// Windows refuses to rename or link a file that is open without
	// sharing; close it first.
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return fail(fmt.Errorf("close temporary file: %w", cerr))
	}

	if testHookBeforeLink != nil {
		testHookBeforeLink(target)
	}
	if replace {
		if err := privatefile.RenameOver(tmp, target); err != nil {
			return fail(fmt.Errorf("rename temporary file: %w", err))
		}
		published, tmpLinked = true, false
	} else {
		if err := os.Link(tmp, target); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return k.existsError(target)
			}
			return fail(fmt.Errorf("link temporary file: %w", err))
		}
		published = true
		if err := os.Remove(tmp); err != nil {
			return fail(fmt.Errorf("remove temporary file: %w", err))
		}
		tmpLinked = false
	}

	if testHookAfterPublish != nil {
		testHookAfterPublish(target)
	}
	g, fi, problem, _, err := openSecret(target)
	if err != nil {
		return fail(fmt.Errorf("inspect published file: %w", err))
	}
	g.Close()
	if !os.SameFile(fi, mine) {
		return fail(errors.New("published file was replaced by another file"))
	}
	if problem != "" {
		return fail(fmt.Errorf("published file %s; removed it again", problem))
	}
	if fi.Size() != int64(len(token)) {
		return fail(fmt.Errorf("published file is %d bytes, want %d; removed it again", fi.Size(), len(token)))
	}
	return nil
}

// openSecret opens target for reading, never through a reparse point, and
// applies the rules every secret file must meet: a regular file owned by
// the current user whose DACL lets nobody else in. A broken rule is
// returned as problem (in words that follow "file") and how to fix it, with
// the file still open; err is for a failed open or stat (f is then nil).
func openSecret(target string) (f *os.File, fi fs.FileInfo, problem, fix string, err error) {
	f, err = privatefile.OpenNoFollow(target)
	if errors.Is(err, privatefile.ErrReparsePoint) {
		return nil, nil, "", "", &reparseError{err}
	}
	if err != nil {
		return nil, nil, "", "", err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, "", "", err
	}
	switch {
	case fi.IsDir():
		return f, fi, "is a directory, not a regular file", "", nil
	case !fi.Mode().IsRegular():
		return f, fi, fmt.Sprintf("is not a regular file (type %s)", fi.Mode().Type()), "", nil
	}
	if err := privatefile.CheckPrivate(f); err != nil {
		return f, fi, fmt.Sprintf("is open to others (%v)", err), "run " + privatefile.RestrictCommand(target), nil
	}
	return f, fi, "", "", nil
}

// reparseError is the open of a symlink, junction or other reparse point.
type reparseError struct{ err error }

func (e *reparseError) Error() string { return e.err.Error() }
func (e *reparseError) Unwrap() error { return e.err }

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
	f, st, problem, fix, err := openSecret(target)
	var rp *reparseError
	switch {
	case errors.As(err, &rp):
		return nil, "", k.fileError(target, "is a symlink", "use a path without symlinks")
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", k.unavailableError(target, fmt.Errorf("file does not exist (%s): %w", k.hint, err))
	case err != nil:
		return nil, "", k.unavailableError(target, fmt.Errorf("open file: %w", err))
	}
	defer f.Close()
	if problem != "" {
		if fix == "" {
			fix = "remove it and " + k.hint
		}
		return nil, "", k.fileError(target, problem, fix)
	}
	if st.Size() == 0 {
		return nil, "", k.unavailableError(target, fmt.Errorf("file is empty (remove it and %s)", k.hint))
	}
	if st.Size() > k.limit() {
		return nil, "", k.unavailableError(target, fmt.Errorf("file is %d bytes, more than the %d allowed", st.Size(), k.limit()))
	}
	buf := make([]byte, k.limit()+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		clear(buf)
		return nil, "", k.unavailableError(target, fmt.Errorf("read file: %w", err))
	}
	if testHookAfterRead != nil {
		testHookAfterRead(target)
	}
	post, err := f.Stat()
	if err != nil {
		clear(buf)
		return nil, "", k.unavailableError(target, fmt.Errorf("inspect open file: %w", err))
	}
	if int64(n) != st.Size() || post.Size() != st.Size() || !post.ModTime().Equal(st.ModTime()) {
		clear(buf)
		return nil, "", k.unavailableError(target, errors.New("file changed while being read; try again"))
	}
	return buf[:n], target, nil
}
