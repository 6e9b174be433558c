package tokenauth

import (
	"errors"
	"fmt"
	"path/filepath"
)

// AnchorFileName is the audit anchor file's name inside the state
// directory: the last audit chain head this install saw, so that a log
// emptied or replaced behind its back is noticed at the next start.
const AnchorFileName = "audit_anchor"

// Errors returned by [WriteAnchor] and [ReadAnchor]. No error ever holds
// the file's content.
var (
	ErrAnchorWrite       = errors.New("could not write audit anchor")
	ErrAnchorUnavailable = errors.New("audit anchor file unavailable or invalid")
)

var anchorKind = &secretKind{
	create: ErrAnchorWrite, replace: ErrAnchorWrite, unavailable: ErrAnchorUnavailable,
	hint: "after a deliberate restore of the store, run `openprogram audit reanchor --yes`",
}

// AnchorPath returns the audit anchor file's path inside stateDir.
func AnchorPath(stateDir string) string {
	return filepath.Join(stateDir, AnchorFileName)
}

// WriteAnchor stores text (1 to 4096 bytes) at path, creating or replacing
// the file, by the procedure [Rotate] uses: written and fsynced under an
// exclusive temporary name (mode 0600, no symlink on the path, a private
// parent directory, missing parents created 0700), renamed over path, the
// directory fsynced, the result checked again. A reader sees the old text
// or the new one, whole. Errors wrap [ErrAnchorWrite].
func WriteAnchor(path string, text []byte) error {
	if len(text) == 0 || len(text) > maxFileSize {
		return fmt.Errorf("%w: %d bytes of text, want 1 to %d", ErrAnchorWrite, len(text), maxFileSize)
	}
	return writeSecret(anchorKind, path, text)
}

// ReadAnchor returns the text stored at path by [WriteAnchor], after the
// checks [Authenticate] applies to the token file. A missing file is an
// error wrapping both [ErrAnchorUnavailable] and [io/fs.ErrNotExist].
// ReadAnchor never creates or changes anything.
func ReadAnchor(path string) ([]byte, error) {
	text, _, err := readSecretFile(anchorKind, path)
	return text, err
}

// PinsFileName is the name, inside the state directory, of the audit
// writer keys this host's verifier pinned: one line per key, written and
// replaced like the anchor.
const PinsFileName = "audit_pins"

// Errors returned by [WritePins] and [ReadPins]. No error ever holds the
// file's content.
var (
	ErrPinsWrite       = errors.New("could not write audit pins")
	ErrPinsUnavailable = errors.New("audit pins file unavailable or invalid")
)

var pinsKind = &secretKind{
	create: ErrPinsWrite, replace: ErrPinsWrite, unavailable: ErrPinsUnavailable,
	hint:    "it is made again by `openprogram audit verify`, pinning the keys the store holds then",
	maxSize: maxPinsSize,
}

// maxPinsSize bounds the pins file: some 400 keys.
const maxPinsSize = 64 << 10

// PinsPath returns the audit pins file's path inside stateDir.
func PinsPath(stateDir string) string {
	return filepath.Join(stateDir, PinsFileName)
}

// WritePins stores text (1 to 65536 bytes) at path by [WriteAnchor]'s
// procedure. Errors wrap [ErrPinsWrite].
func WritePins(path string, text []byte) error {
	if len(text) == 0 || len(text) > maxPinsSize {
		return fmt.Errorf("%w: %d bytes of text, want 1 to %d", ErrPinsWrite, len(text), maxPinsSize)
	}
	return writeSecret(pinsKind, path, text)
}

// ReadPins returns the text stored at path by [WritePins], after the
// checks [ReadAnchor] makes. A missing file is an error wrapping both
// [ErrPinsUnavailable] and [io/fs.ErrNotExist].
func ReadPins(path string) ([]byte, error) {
	text, _, err := readSecretFile(pinsKind, path)
	return text, err
}
