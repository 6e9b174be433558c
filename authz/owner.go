package authz

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/internal/privatefile"
)

// OwnerFileName is the file in the state directory that holds the owner principal.
const OwnerFileName = "owner.json"

// ErrOwnerFile is wrapped by every error of [LoadOrCreateOwnerPrincipal] that concerns
// the contents or permissions of an existing owner.json.
var ErrOwnerFile = errors.New("invalid owner principal file")

const maxOwnerFileSize = 4096

type ownerFile struct {
	Version     int    `json:"version"`
	PrincipalID string `json:"principal_id"`
}

// LoadOrCreateOwnerPrincipal returns the install's owner principal id
// ("owner/install/<16 hex>") from <stateDir>/owner.json, creating the file once when it
// does not exist: {"version":1,"principal_id":"owner/install/<16 random hex>"}, owner-only
// (mode 0600 on Unix; on Windows a protected DACL for the user and SYSTEM),
// written to an exclusive temporary file (O_EXCL) and linked into place, so a concurrent
// caller sees either no file or a complete one and every caller gets the same id. A
// missing stateDir is created owner-only (0700).
//
// Every load validates the file and fails closed: it must be a regular file (not a
// symlink or other reparse point), owned by the current user, mode exactly 0600 (on
// Windows: a DACL that lets nobody but the user and SYSTEM in), at most 4096 bytes, and hold
// exactly version 1 and a well-formed principal id with no other keys. The file is never
// repaired or replaced.
func LoadOrCreateOwnerPrincipal(stateDir string) (string, error) {
	if stateDir == "" {
		return "", errors.New("owner principal: state directory is empty")
	}
	target := filepath.Join(stateDir, OwnerFileName)
	id, err := loadOwner(target)
	if !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	if err := privatefile.MkdirAll(stateDir); err != nil {
		return "", fmt.Errorf("owner principal: create state directory %s: %w", stateDir, err)
	}
	if err := createOwner(stateDir, target); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	return loadOwner(target)
}

func loadOwner(target string) (string, error) {
	f, err := privatefile.OpenNoFollow(target)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("%w: open %s: %w (it must be a regular file, not a symlink)", ErrOwnerFile, target, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%w: stat %s: %w", ErrOwnerFile, target, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file; remove it to create a new owner principal", ErrOwnerFile, target)
	}
	if err := checkOwnerFile(f, fi, target); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxOwnerFileSize+1))
	if err != nil {
		return "", fmt.Errorf("%w: read %s: %w", ErrOwnerFile, target, err)
	}
	if len(data) > maxOwnerFileSize {
		return "", fmt.Errorf("%w: %s is larger than %d bytes", ErrOwnerFile, target, maxOwnerFileSize)
	}
	id, err := parseOwner(data)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w; restore it from a backup (changing it changes the owner principal)", ErrOwnerFile, target, err)
	}
	return id, nil
}

// parseOwner validates the contents of owner.json.
func parseOwner(data []byte) (string, error) {
	var raw map[string]json.RawMessage
	if err := strictUnmarshal(data, &raw); err != nil {
		return "", fmt.Errorf("not a JSON object: %w", err)
	}
	if raw == nil {
		return "", errors.New("not a JSON object")
	}
	for k := range raw {
		if k != "version" && k != "principal_id" {
			return "", fmt.Errorf("unknown key %s", show(clip.String(k, msgClip)))
		}
	}
	if len(raw) != 2 {
		return "", errors.New(`"version" and "principal_id" are both required`)
	}
	var of ownerFile
	if err := strictUnmarshal(data, &of); err != nil {
		return "", err
	}
	if !bytes.Equal(bytes.TrimSpace(raw["version"]), []byte("1")) {
		return "", fmt.Errorf("version must be 1")
	}
	if !IsPrincipalID(of.PrincipalID) {
		return "", fmt.Errorf("principal_id %s is not owner/install/<16 hex>", show(clip.String(of.PrincipalID, msgClip)))
	}
	return of.PrincipalID, nil
}

// createOwner writes a new owner.json through an exclusive temporary file and link(2),
// which never replaces an existing file. It returns an error wrapping fs.ErrExist when
// another caller created the file first.
func createOwner(dir, target string) (err error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("owner principal: random id: %w", err)
	}
	data, err := json.Marshal(ownerFile{Version: 1, PrincipalID: principalPrefix + hex.EncodeToString(b[:])})
	if err != nil {
		return fmt.Errorf("owner principal: encode: %w", err)
	}
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return fmt.Errorf("owner principal: random name: %w", err)
	}
	tmp := filepath.Join(dir, "."+OwnerFileName+".tmp-"+hex.EncodeToString(nb[:]))
	f, err := privatefile.Create(tmp)
	if err != nil {
		return fmt.Errorf("owner principal: create %s: %w", tmp, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("owner principal: close %s: %w", tmp, cerr)
		}
		if rerr := os.Remove(tmp); rerr != nil && err == nil {
			err = fmt.Errorf("owner principal: remove %s: %w", tmp, rerr)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("owner principal: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("owner principal: sync %s: %w", tmp, err)
	}
	if err := os.Link(tmp, target); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("owner principal: link %s: %w", target, err)
	}
	if err := privatefile.SyncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("owner principal: sync directory %s: %w", dir, err)
	}
	return nil
}
