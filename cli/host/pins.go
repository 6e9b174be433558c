package host

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openprogram/openprogram/cli/internal/slots"
	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

// Pin is one audit writer key this host's verifier trusts.
type Pin struct {
	ID        string // the key's id (32 hex digits of its SHA-256)
	PublicKey string // unpadded base64url
	Label     string // whose it is, as the store said when it was pinned
}

// ReadPins returns the pins at path (tokenauth.PinsFileName), none when
// the file does not exist yet. A line is "<id> <public key> <label>".
func ReadPins(path string) ([]Pin, error) {
	text, err := tokenauth.ReadPins(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the audit pins: %w", err)
	}
	var out []Pin
	for n, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: %s line %d: want <key id> <public key> <label>", tokenauth.ErrPinsUnavailable, path, n+1)
		}
		p := Pin{ID: f[0], PublicKey: f[1]}
		if len(f) == 3 {
			p.Label = f[2]
		}
		if pub, ok := decodePin(p); !ok || pub == nil {
			return nil, fmt.Errorf("%w: %s line %d: not a key and its id", tokenauth.ErrPinsUnavailable, path, n+1)
		}
		out = append(out, p)
	}
	return out, nil
}

// PinnedKeys returns pins as store options want them.
func PinnedKeys(pins []Pin) map[string]ed25519.PublicKey {
	out := make(map[string]ed25519.PublicKey, len(pins))
	for _, p := range pins {
		pub, _ := decodePin(p)
		out[p.ID] = pub
	}
	return out
}

// AddPins adds to the pins at path every key of keys not pinned yet, and
// returns those it added. A key whose id is pinned is left as it is (the
// store refuses a key that contradicts its pin).
//
// Processes of one host may pin at once (a client starting its servers
// together), and the file is replaced whole: AddPins reads and writes it
// holding the host's pins lock (a one-slot [slots] lock beside the runner
// slots), so no write is replaced under another or loses its key.
//
// Every start of a host's servers asks for the host's own key, which is
// pinned from its first start on: the file, replaced whole and atomically,
// is read first without the lock, and the lock is taken only to add. (On
// Windows a writer's rename over the file while another process reads it
// is retried by the rename itself: internal/privatefile.RenameOver.)
func AddPins(path string, keys []sessions.AuditKey) ([]sessions.AuditKey, error) {
	pins, err := ReadPins(path)
	if err != nil {
		return nil, err
	}
	have := PinnedKeys(pins)
	if !slices.ContainsFunc(keys, func(k sessions.AuditKey) bool { return have[k.ID] == nil }) {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), pinsLockWait)
	defer cancel()
	lock, err := slots.Acquire(ctx, filepath.Join(filepath.Dir(path), slots.DirName), pinsLockName, 1)
	if err != nil {
		return nil, fmt.Errorf("write the audit pins: take the pins lock: %w", err)
	}
	defer lock.Close()
	return addPinsOnce(path, keys)
}

// pinsLockName names the pins lock's slot file in the slot directory, and
// pinsLockWait bounds the wait for it (a write holds it for milliseconds).
const (
	pinsLockName = "audit_pins"
	pinsLockWait = 30 * time.Second
)

// addPinsOnce reads the pins at path and, when keys holds some not pinned,
// writes the file with them; it returns those it wrote (nil: all were
// pinned already). The caller holds the pins lock.
func addPinsOnce(path string, keys []sessions.AuditKey) ([]sessions.AuditKey, error) {
	pins, err := ReadPins(path)
	if err != nil {
		return nil, err
	}
	have := PinnedKeys(pins)
	var added []sessions.AuditKey
	for _, k := range keys {
		if have[k.ID] != nil {
			continue
		}
		p := Pin{ID: k.ID, PublicKey: k.PublicKey, Label: pinLabel(k.Label)}
		if _, ok := decodePin(p); !ok {
			return nil, fmt.Errorf("audit writer key %s: the store holds no valid key under that id", k.ID)
		}
		pins = append(pins, p)
		have[k.ID] = ed25519.PublicKey{}
		added = append(added, k)
	}
	if len(added) == 0 {
		return nil, nil
	}
	sort.Slice(pins, func(i, j int) bool { return pins[i].ID < pins[j].ID })
	var b strings.Builder
	for _, p := range pins {
		fmt.Fprintf(&b, "%s %s %s\n", p.ID, p.PublicKey, p.Label)
	}
	if err := tokenauth.WritePins(path, []byte(b.String())); err != nil {
		return nil, fmt.Errorf("write the audit pins: %w", err)
	}
	return added, nil
}

// decodePin decodes p's key and checks it against p's id.
func decodePin(p Pin) (ed25519.PublicKey, bool) {
	pub, ok := sessions.DecodeAuditKey(p.PublicKey)
	if !ok || sessions.AuditKeyID(pub) != p.ID {
		return nil, false
	}
	return pub, true
}

// pinLabel is a label as one line of the pins file: printable, bounded.
func pinLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	return clip.String(s, 64)
}

// signerLabel names this host's signing key in the store: the host name.
func signerLabel() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "unknown host"
	}
	return pinLabel(name)
}
