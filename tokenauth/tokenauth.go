package tokenauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/openprogram/openprogram/internal/environ"
)

const (
	// EnvVar is the environment variable that carries the token to the server.
	EnvVar = "OPENPROGRAM_MCP_TOKEN"
	// FileName is the token file's name inside the state directory.
	FileName = "mcp_server_token"
)

const (
	tokenBytes  = 32    // random bytes behind a token
	fileMode    = 0o600 // the only mode a token file may have
	maxFileSize = 4096  // largest token file Authenticate reads
)

// secretKind is what differs between the secret files this package keeps:
// the sentinels their errors wrap and how to make a new one.
type secretKind struct {
	exists, create, unavailable error
	replace                     error  // what a failed replacement wraps
	hint                        string // how to make a new file, after "remove it and"
	maxSize                     int64  // largest file read; 0: maxFileSize
}

// limit is the largest file of kind k that is read.
func (k *secretKind) limit() int64 {
	if k.maxSize > 0 {
		return k.maxSize
	}
	return maxFileSize
}

var tokenKind = &secretKind{
	exists: ErrExists, create: ErrCreate, unavailable: ErrUnavailable, replace: ErrRotate,
	hint: "run `openprogram mcp token create`",
}

// Errors returned by [Create] and [Authenticate]. Each returned error wraps
// exactly one of them (test with [errors.Is]) and may add a cause naming the
// path and what was wrong with it. No error ever holds a token or part of one.
var (
	// ErrExists: Create found something at the path already (a file, a
	// symlink, anything) and left it untouched.
	ErrExists = errors.New("mcp server token already exists")
	// ErrCreate: Create failed for any other reason; nothing was left behind.
	ErrCreate = errors.New("could not create mcp server token")
	// ErrRotate: Rotate found no valid token to replace, or failed to
	// publish the new one.
	ErrRotate = errors.New("could not rotate mcp server token")
	// ErrUnavailable: the token file, or a directory on its path, is missing
	// or breaks a rule (symlink, owner, mode, type, size, changed while read).
	ErrUnavailable = errors.New("mcp server token file unavailable or invalid")
	// ErrEnvRequired: the environment does not set EnvVar to a non-empty value.
	ErrEnvRequired = errors.New("environment variable " + EnvVar + " is required")
	// ErrAuthFailed: the token in the environment differs from the stored one.
	ErrAuthFailed = errors.New("mcp server authentication failed")
)

// Test hooks, nil outside tests: Create just before it links and after it
// published (before it re-verifies); Authenticate after it read the file
// (before it looks at it again).
var (
	testHookBeforeLink   func(path string)
	testHookAfterPublish func(path string)
	testHookAfterRead    func(path string)
)

// Path returns the token file's path inside stateDir.
func Path(stateDir string) string {
	return filepath.Join(stateDir, FileName)
}

// Fingerprint returns the client identity of token: the first 16 lowercase
// hex characters of its SHA-256. It cannot be turned back into the token.
func Fingerprint(token string) string {
	return fingerprint([]byte(token))
}

func fingerprint(token []byte) string {
	sum := sha256.Sum256(token)
	return hex.EncodeToString(sum[:8])
}

// Create makes a new token and stores it at path, which it never replaces.
//
// The token is 32 bytes from crypto/rand in unpadded base64url: 43
// characters of [A-Za-z0-9_-], stored with no newline in a regular file of
// mode 0600. Missing directories are created with mode 0700. No component of
// path may be a symlink, and the directory holding the file must belong to
// the current user and grant nothing to group or others.
//
// The file appears complete or not at all: the token is written and fsynced
// to an exclusive temporary file in the same directory, hard-linked to path
// (which fails if anything is there), the directory is fsynced, the temporary
// name removed, and the published file checked once more; if that check
// fails the file is removed again.
//
// If anything already exists at path, Create returns an error wrapping
// [ErrExists]; any other failure wraps [ErrCreate]. Of several callers racing
// on one path, in one process or many, exactly one gets the token.
func Create(path string) (string, error) {
	raw, err := createSecret(tokenKind, path)
	if err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	clear(raw)
	return token, nil
}

func (k *secretKind) existsError(target string) error {
	return fmt.Errorf("%w: %q (it is never replaced; remove it first to make a new one)", k.exists, target)
}

func (k *secretKind) createError(target string, cause error) error {
	return fmt.Errorf("%w: %q: %w", k.create, target, cause)
}

// Rotate replaces the token at path with a new one and returns it: it is
// [NewToken] then [RotateTo]. A caller that must record the rotation
// before it happens (the audit log) calls the two itself.
func Rotate(path string) (string, error) {
	token, err := NewToken()
	if err != nil {
		return "", err
	}
	if err := RotateTo(path, token); err != nil {
		return "", err
	}
	return token, nil
}

// NewToken makes a new token, as [Create] and [Rotate] do, and writes
// nothing. Its [Fingerprint] is the client id it will give.
func NewToken() (string, error) {
	raw, err := newSecret()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrRotate, err)
	}
	defer clear(raw)
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// newSecret returns tokenBytes random bytes: the one source of every
// token and key this package makes.
func newSecret() ([]byte, error) {
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("read random bytes: %w", err)
	}
	return raw, nil
}

// RotateTo replaces the token at path with token, which must be one
// [NewToken] made (else the error wraps [ErrRotate] and nothing changes).
// It is the one way to replace a token, for when the old one may have
// leaked.
//
// The file at path must be a valid token file (the rules of [Authenticate]);
// otherwise nothing changes and the error wraps [ErrRotate]. The new token
// is written like [Create]'s, to an exclusive temporary file that is then
// renamed over path: a reader sees the old token or the new one, whole,
// never a mix or nothing, and the old token stops authenticating the moment
// the rename is done. Servers already running keep their session.
func RotateTo(path, token string) error {
	// The one form NewToken writes: decoding alone would let a newline
	// (which base64 skips) into the file.
	if raw, err := base64.RawURLEncoding.Strict().DecodeString(token); err != nil || len(raw) != tokenBytes ||
		base64.RawURLEncoding.EncodeToString(raw) != token {
		return fmt.Errorf("%w: the new token is not one NewToken made", ErrRotate)
	}
	return rotateTo(path, token)
}

// Read returns the token stored at path, after the checks [Authenticate]
// makes (errors wrap [ErrUnavailable]). It is for tools that must write the
// token into a client's configuration; never log what it returns.
func Read(path string) (string, error) {
	stored, _, err := readSecretFile(tokenKind, path)
	if err != nil {
		return "", err
	}
	defer clear(stored)
	return string(stored), nil
}

// fileError reports a rule checkFile found broken.
func (k *secretKind) fileError(target, problem, fix string) error {
	return k.unavailableError(target, fmt.Errorf("file %s (%s)", problem, fix))
}

// Authenticate checks the token in env against the token file at path
// and returns the client identity, [Fingerprint] of the stored token.
//
// env is in [os.Environ] form. The first entry for [EnvVar] counts, as
// with [os.Getenv] on Linux; if it is missing or empty the error wraps
// [ErrEnvRequired]. The file must pass the rules of [Create] (no symlink on
// the path, private parent directory, regular file owned by the current
// user, mode exactly 0600) and be 1 to 4096 bytes that do not change while
// read, else the error wraps [ErrUnavailable]. Its bytes are compared with
// the environment's as they are, untrimmed, in constant time; a difference
// wraps [ErrAuthFailed]. Authenticate never creates or changes anything, and
// never blocks on a FIFO.
//
// Any error means the caller is not authenticated; clientID is then "".
func Authenticate(env []string, path string) (clientID string, err error) {
	token, _ := environ.Lookup(env, EnvVar)
	got := []byte(token)
	defer clear(got)
	if len(got) == 0 {
		return "", fmt.Errorf("%w: set it to the token printed by `openprogram mcp token create`", ErrEnvRequired)
	}
	stored, target, err := readSecretFile(tokenKind, path)
	if err != nil {
		return "", err
	}
	defer clear(stored)
	if equal(got, stored) != 1 {
		return "", fmt.Errorf("%w: %s does not match the token in %q", ErrAuthFailed, EnvVar, target)
	}
	return fingerprint(stored), nil
}

// equal compares the presented token with the stored one. It is
// crypto/subtle's constant-time comparison, and a test holds it to that: a
// comparison whose time depends on where the first difference is would leak
// the token byte by byte.
var equal = subtle.ConstantTimeCompare

// lookupEnv returns the value of the first EnvVar entry in environ.
func (k *secretKind) unavailableError(target string, cause error) error {
	return fmt.Errorf("%w: %q: %w", k.unavailable, target, cause)
}
