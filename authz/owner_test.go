package authz_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

var ownerFileRE = regexp.MustCompile(`^\{"version":1,"principal_id":"owner/install/[0-9a-f]{16}"\}$`)

func TestLoadOrCreateOwnerPrincipal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "nested")
	id, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	if !authz.IsPrincipalID(id) {
		t.Fatalf("principal %q is not owner/install/<16 hex>", id)
	}
	path := filepath.Join(dir, "owner.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !ownerFileRE.Match(data) || !strings.Contains(string(data), id) {
		t.Errorf("owner.json = %s, want {\"version\":1,\"principal_id\":%q}", data, id)
	}
	checkOwnerOnly(t, path, false)
	checkOwnerOnly(t, dir, true)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("state dir holds %d entries, want only owner.json (no temp files left)", len(entries))
	}
	again, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil || again != id {
		t.Errorf("second call = %q, %v; want %q, nil", again, err, id)
	}
	other, err := authz.LoadOrCreateOwnerPrincipal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if other == id {
		t.Errorf("two installs got the same principal %q", id)
	}
}

func TestLoadOrCreateOwnerPrincipalConcurrent(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i], errs[i] = authz.LoadOrCreateOwnerPrincipal(dir) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("caller %d got %q, caller 0 got %q", i, ids[i], ids[0])
		}
	}
}

func TestLoadOrCreateOwnerPrincipalExisting(t *testing.T) {
	dir := t.TempDir()
	content := `{"principal_id": "owner/install/00112233aabbccdd", "version": 1}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "owner.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil || id != "owner/install/00112233aabbccdd" {
		t.Errorf("LoadOrCreateOwnerPrincipal = %q, %v; want the stored id", id, err)
	}
}

func TestLoadOrCreateOwnerPrincipalFailsClosed(t *testing.T) {
	good := `{"version":1,"principal_id":"owner/install/0123456789abcdef"}`
	cases := map[string]struct {
		content string
		mode    os.FileMode
	}{
		"empty":               {"", 0o600},
		"not json":            {"owner/install/0123456789abcdef", 0o600},
		"array":               {`[1]`, 0o600},
		"null":                {`null`, 0o600},
		"version 2":           {`{"version":2,"principal_id":"owner/install/0123456789abcdef"}`, 0o600},
		"version 1.0":         {`{"version":1.0,"principal_id":"owner/install/0123456789abcdef"}`, 0o600},
		"version string":      {`{"version":"1","principal_id":"owner/install/0123456789abcdef"}`, 0o600},
		"missing version":     {`{"principal_id":"owner/install/0123456789abcdef"}`, 0o600},
		"missing principal":   {`{"version":1}`, 0o600},
		"upper hex":           {`{"version":1,"principal_id":"owner/install/0123456789ABCDEF"}`, 0o600},
		"short principal":     {`{"version":1,"principal_id":"owner/install/0123"}`, 0o600},
		"other prefix":        {`{"version":1,"principal_id":"client/install/0123456789abcdef"}`, 0o600},
		"extra key":           {`{"version":1,"principal_id":"owner/install/0123456789abcdef","tier":"owner"}`, 0o600},
		"trailing data":       {good + `{}`, 0o600},
		"two objects":         {good + good, 0o600},
		"too big":             {good + strings.Repeat(" ", 5000), 0o600},
		"group readable":      {good, 0o640},
		"world writable":      {good, 0o606},
		"read only":           {good, 0o400},
		"executable":          {good, 0o700},
		"principal is number": {`{"version":1,"principal_id":1}`, 0o600},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.mode != 0o600 && modeRule != "" {
				t.Skip(modeRule)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "owner.json")
			if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			id, err := authz.LoadOrCreateOwnerPrincipal(dir)
			if err == nil || !errors.Is(err, authz.ErrOwnerFile) {
				t.Fatalf("LoadOrCreateOwnerPrincipal = %q, %v; want ErrOwnerFile", id, err)
			}
			if id != "" {
				t.Errorf("id = %q on error, want empty", id)
			}
			after, _ := os.ReadFile(path)
			if string(after) != c.content {
				t.Errorf("owner.json changed to %q", after)
			}
		})
	}
}

func TestLoadOrCreateOwnerPrincipalSymlinkAndDir(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(t.TempDir(), "owner.json")
	if err := os.WriteFile(real, []byte(`{"version":1,"principal_id":"owner/install/0123456789abcdef"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "owner.json")); err != nil {
		t.Fatal(err)
	}
	symlinkOK(t, filepath.Join(dir, "owner.json"))
	if id, err := authz.LoadOrCreateOwnerPrincipal(dir); !errors.Is(err, authz.ErrOwnerFile) {
		t.Errorf("symlinked owner.json: got %q, %v; want ErrOwnerFile", id, err)
	}

	dangling := t.TempDir()
	target := filepath.Join(t.TempDir(), "planted.json")
	if err := os.Symlink(target, filepath.Join(dangling, "owner.json")); err != nil {
		t.Fatal(err)
	}
	if id, err := authz.LoadOrCreateOwnerPrincipal(dangling); err == nil {
		t.Errorf("dangling symlink owner.json: got %q, nil; want an error", id)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created through the dangling symlink: %v", err)
	}

	asDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(asDir, "owner.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if id, err := authz.LoadOrCreateOwnerPrincipal(asDir); !errors.Is(err, authz.ErrOwnerFile) {
		t.Errorf("owner.json directory: got %q, %v; want ErrOwnerFile", id, err)
	}

	if _, err := authz.LoadOrCreateOwnerPrincipal(""); err == nil {
		t.Error("empty state dir: want an error")
	}
}

func TestOwnerFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	id, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "owner.json"))
	var v struct {
		Version     int    `json:"version"`
		PrincipalID string `json:"principal_id"`
	}
	if err := json.Unmarshal(data, &v); err != nil || v.Version != 1 || v.PrincipalID != id {
		t.Errorf("owner.json = %s (%v), want version 1 and %q", data, err, id)
	}
	a, err := authz.MCPClientAuthority(clientID, id)
	if err != nil || a.PrincipalID != id {
		t.Errorf("MCPClientAuthority with a created principal: %+v, %v", a, err)
	}
}

func TestLoadOrCreateOwnerPrincipalStateDirIsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if id, err := authz.LoadOrCreateOwnerPrincipal(file); err == nil {
		t.Errorf("state dir is a file: got %q, nil; want an error", id)
	}
}
