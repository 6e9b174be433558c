package clients

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// TestInstallKeepsCRLF: a client file saved with CRLF line endings (a
// Windows editor's) stays CRLF through install and uninstall, every line
// of it, and uninstall gives back the very bytes it started from; an LF
// file stays LF.
func TestInstallKeepsCRLF(t *testing.T) {
	files := map[string]string{
		"cursor": "{\n  // mine\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n",
		"codex":  "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
	}
	for client, text := range files {
		for _, eol := range []string{"\r\n", "\n"} {
			t.Run(client+strings.ReplaceAll(strings.ReplaceAll(eol, "\r", " CR"), "\n", " LF"), func(t *testing.T) {
				home := t.TempDir()
				env := settings.Env{settings.HomeVar + "=" + home, "APPDATA=" + filepath.Join(home, "AppData", "Roaming"), "PATH="}
				path, err := configPath(env, client, "user")
				if err != nil {
					t.Fatal(err)
				}
				orig := []byte(strings.ReplaceAll(text, "\n", eol))
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, orig, 0o600); err != nil {
					t.Fatal(err)
				}
				in := Installer{Stdout: io.Discard, Stderr: io.Discard, Env: env}
				l := Launch{exe: filepath.Join(home, "Program Files", "openprogram.exe"), secrets: []string{"OPENPROGRAM_MCP_TOKEN"}}
				if err := in.Install(context.Background(), Target{Client: client, Scope: "user"}, l); err != nil {
					t.Fatal(err)
				}
				got, _ := os.ReadFile(path)
				if !bytes.Contains(got, []byte("openprogram")) {
					t.Fatalf("install wrote no entry:\n%s", got)
				}
				lines := bytes.Count(got, []byte("\n"))
				if eol == "\r\n" && (bytes.Count(got, []byte("\r\n")) != lines || !bytes.HasSuffix(got, []byte("\r\n"))) {
					t.Errorf("install over a CRLF file wrote %d LF lines of %d:\n%q", lines-bytes.Count(got, []byte("\r\n")), lines, got)
				}
				if eol == "\n" && bytes.Contains(got, []byte("\r")) {
					t.Errorf("install over an LF file wrote a CR:\n%q", got)
				}
				if err := in.Install(context.Background(), Target{Client: client, Scope: "user"}, l); err != nil {
					t.Fatal(err)
				}
				if again, _ := os.ReadFile(path); !bytes.Equal(again, got) {
					t.Errorf("a second install changed the file:\n%q\nwas\n%q", again, got)
				}
				if err := in.Uninstall(context.Background(), Target{Client: client, Scope: "user"}, nil); err != nil {
					t.Fatal(err)
				}
				if back, _ := os.ReadFile(path); !bytes.Equal(back, orig) {
					t.Errorf("install then uninstall did not give back the file:\n%q\nwant\n%q", back, orig)
				}
			})
		}
	}
}
