package tokenauth

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// KeyFileName is the audit key file's name inside the state directory.
const KeyFileName = "audit_key"

// KeySize is the length in bytes of an audit key.
const KeySize = tokenBytes

// Errors returned by [CreateKey], [ReadKey] and [LoadOrCreateKey], in the
// roles [ErrExists], [ErrCreate] and [ErrUnavailable] have for the token. No
// error ever holds key material.
var (
	ErrKeyExists      = errors.New("audit key already exists")
	ErrKeyCreate      = errors.New("could not create audit key")
	ErrKeyUnavailable = errors.New("audit key file unavailable or invalid")
)

var keyKind = &secretKind{
	exists: ErrKeyExists, create: ErrKeyCreate, unavailable: ErrKeyUnavailable,
	hint: "restore it from a backup or from the host that created the audit log (without it the audit log cannot be verified or extended)",
}

// KeyPath returns the audit key file's path inside stateDir.
func KeyPath(stateDir string) string {
	return filepath.Join(stateDir, KeyFileName)
}

// CreateKey makes a new [KeySize]-byte audit key from crypto/rand and stores
// it at path, which it never replaces, by exactly the procedure and rules of
// [Create]: unpadded base64url text, mode 0600, no symlink on the path, a
// private parent directory, published with link(2) or not at all. Errors
// wrap [ErrKeyExists] or [ErrKeyCreate].
func CreateKey(path string) ([]byte, error) {
	return createSecret(keyKind, path)
}

// ReadKey returns the audit key stored at path. The file must pass the rules
// [Authenticate] applies to the token file and hold exactly [KeySize] bytes
// in unpadded base64url, else the error wraps [ErrKeyUnavailable]. ReadKey
// never creates or changes anything.
func ReadKey(path string) ([]byte, error) {
	return readKeyOf(keyKind, path)
}

// readKeyOf reads a [KeySize]-byte secret of kind k at path.
func readKeyOf(k *secretKind, path string) ([]byte, error) {
	keyKind := k
	text, target, err := readSecretFile(keyKind, path)
	if err != nil {
		return nil, err
	}
	defer clear(text)
	// The decoder skips newlines: the length check keeps the file exact.
	key := make([]byte, base64.RawURLEncoding.DecodedLen(len(text)))
	n, err := base64.RawURLEncoding.Decode(key, text)
	if err != nil || n != KeySize || len(text) != base64.RawURLEncoding.EncodedLen(KeySize) {
		clear(key)
		// The decoder's error quotes a byte offset only, never key material.
		return nil, keyKind.unavailableError(target, fmt.Errorf("file does not hold a %d-byte key in unpadded base64url (%s)", KeySize, keyKind.hint))
	}
	return key[:n], nil
}

// LoadOrCreateKey returns the audit key at path, creating it with
// [CreateKey] when nothing is there; created reports whether this call made
// it. Of several callers racing on one path, all get the one key that won.
func LoadOrCreateKey(path string) (key []byte, created bool, err error) {
	return loadOrCreateKeyOf(keyKind, path)
}

func loadOrCreateKeyOf(k *secretKind, path string) (key []byte, created bool, err error) {
	key, err = readKeyOf(k, path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key, err = createSecret(k, path)
	if errors.Is(err, k.exists) {
		key, err = readKeyOf(k, path)
		return key, false, err
	}
	return key, err == nil, err
}

// SigningKeyFileName is the name, inside the state directory, of the
// seed of this host's Ed25519 audit signing key: the key that signs the
// host's audit writer chains. Its public half is recorded in the store;
// the file never leaves the host.
const SigningKeyFileName = "audit_signing_key"

// Errors returned by [ReadSigningKey] and [LoadOrCreateSigningKey], in the
// roles [ErrKeyExists], [ErrKeyCreate] and [ErrKeyUnavailable] have for the
// audit key. No error ever holds key material.
var (
	ErrSigningKeyExists      = errors.New("audit signing key already exists")
	ErrSigningKeyCreate      = errors.New("could not create audit signing key")
	ErrSigningKeyUnavailable = errors.New("audit signing key file unavailable or invalid")
)

var signingKeyKind = &secretKind{
	exists: ErrSigningKeyExists, create: ErrSigningKeyCreate, unavailable: ErrSigningKeyUnavailable,
	hint: "restore it from a backup; or, to give this host a new key, move it away, start openprogram (a new key is made and recorded) and revoke the old one with `openprogram audit keys revoke`",
}

// SigningKeyPath returns the audit signing key file's path inside stateDir.
func SigningKeyPath(stateDir string) string {
	return filepath.Join(stateDir, SigningKeyFileName)
}

// ReadSigningKey returns the Ed25519 signing key whose seed is stored at
// path, after the checks [ReadKey] makes. It never creates anything.
func ReadSigningKey(path string) (ed25519.PrivateKey, error) {
	seed, err := readKeyOf(signingKeyKind, path)
	if err != nil {
		return nil, err
	}
	defer clear(seed)
	return ed25519.NewKeyFromSeed(seed), nil
}

// LoadOrCreateSigningKey returns the signing key at path, creating its
// seed (32 bytes from crypto/rand) with the no-replace procedure of
// [CreateKey] when nothing is there; created reports whether this call
// made it. Of several callers racing on one path, all get the one key
// that won.
func LoadOrCreateSigningKey(path string) (key ed25519.PrivateKey, created bool, err error) {
	seed, created, err := loadOrCreateKeyOf(signingKeyKind, path)
	if err != nil {
		return nil, false, err
	}
	defer clear(seed)
	return ed25519.NewKeyFromSeed(seed), created, nil
}
