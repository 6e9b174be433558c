//go:build windows

package cli_test

import (
	"testing"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/internal/wine"
)

// TestInstallFilesOwnerOnly: whatever DACL a client's file had (the one it
// inherited from its folder, which lets Administrators in too),
// install and uninstall leave it, and every backup of it, owner-only: the
// backups of a Claude Desktop file hold the MCP token and the model key.
func TestInstallFilesOwnerOnly(t *testing.T) {
	if wine.Detected() {
		t.Skip("Wine keeps no DACLs (every file reads back open to everyone): owner-only files are proven on Windows")
	}
	for _, ic := range installClients {
		t.Run(ic.client, func(t *testing.T) {
			env, home := installEnv(t)
			path := ic.path(home)
			putFile(t, path, ic.existing, 0o644)
			mustCLI(t, env, "mcp", "install", "--client", ic.client)
			mustCLI(t, env, "mcp", "uninstall", "--client", ic.client)
			checkPrivate(t, path)
			bs := backups(t, path)
			if len(bs) != 2 {
				t.Fatalf("backups = %v, want one of install and one of uninstall", bs)
			}
			for _, b := range bs {
				checkPrivate(t, b)
			}
			if !privatefile.ACLsEnforced() {
				t.Fatal("privatefile.ACLsEnforced is false outside Wine")
			}
		})
	}
}
