package host_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

// TestAddPinsConcurrently: many processes of one host starting together
// (a client that starts its servers at once) each pin a key; none fails
// because another replaced the file under it, and no key is lost to a
// concurrent write.
func TestAddPinsConcurrently(t *testing.T) {
	for round := range 20 {
		state := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(state, 0o700); err != nil {
			t.Fatal(err)
		}
		path := tokenauth.PinsPath(state)
		const writers = 8
		keys := make([]sessions.AuditKey, writers)
		for i := range keys {
			pub, _, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			keys[i] = sessions.AuditKey{ID: sessions.AuditKeyID(pub), PublicKey: sessions.EncodeAuditKey(pub), Label: "host"}
		}
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Go(func() { _, errs[i] = host.AddPins(path, keys[i:i+1]) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: AddPins %d = %v", round, i, err)
			}
		}
		pins, err := host.ReadPins(path)
		if err != nil {
			t.Fatal(err)
		}
		have := host.PinnedKeys(pins)
		for _, k := range keys {
			if have[k.ID] == nil {
				t.Fatalf("round %d: key %s was lost to a concurrent write (%d of %d pinned)", round, k.ID, len(have), writers)
			}
		}
	}
}
