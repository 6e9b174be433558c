package clients

import (
	"strings"
	"testing"
)

// TestUpsertTOMLInPlace: our table (with a subtable written by hand) is
// replaced where it stands; what follows keeps its place and comments.
func TestUpsertTOMLInPlace(t *testing.T) {
	old := `[mcp_servers.openprogram]
command = "/old/openprogram"
args = ["mcp", "serve"]

[mcp_servers.openprogram.env]
OPENPROGRAM_MCP_TOKEN = "literal-token"

# next: another server
[mcp_servers.other]
command = "x"
`
	table := codexTable(Launch{exe: "/new/openprogram", secrets: []string{"OPENPROGRAM_MCP_TOKEN"}})
	got, err := upsertTOML([]byte(old), table)
	if err != nil {
		t.Fatalf("upsertTOML = %v", err)
	}
	want := table + "\n# next: another server\n[mcp_servers.other]\ncommand = \"x\"\n"
	if string(got) != want {
		t.Errorf("upsertTOML =\n%s\nwant:\n%s", got, want)
	}
	again, err := upsertTOML(got, table)
	if err != nil || string(again) != string(got) {
		t.Errorf("second upsertTOML changed the file (%v):\n%s", err, again)
	}
}

// TestUpsertTOMLRefuses: our entry in a form that cannot be edited safely,
// and files that are not TOML, are errors.
func TestUpsertTOMLRefuses(t *testing.T) {
	table := codexTable(Launch{exe: "/bin/openprogram", secrets: []string{"OPENPROGRAM_MCP_TOKEN"}})
	for name, old := range map[string]string{
		"dotted keys":    "mcp_servers.openprogram.command = \"x\"\n",
		"inline table":   "[mcp_servers]\nopenprogram = { command = \"x\" }\n",
		"inline servers": "mcp_servers = { other = { command = \"x\" } }\n",
		"not toml":       "[[[\n",
	} {
		if got, err := upsertTOML([]byte(old), table); err == nil {
			t.Errorf("%s: upsertTOML = %q, want an error", name, got)
		}
	}
}

// TestUpsertJSONShapes: compact, empty and trailing-comma objects all get
// an entry a JSON parser reads, and uninstall gives the file back.
func TestUpsertJSONShapes(t *testing.T) {
	entry := jsonServer{Command: "/bin/openprogram", Args: serveArgs, Env: map[string]string{"A": "<b>&"}}
	for _, old := range []string{
		`{}`,
		`{"mcpServers":{}}`,
		`{"mcpServers":{"other":{"command":"x"}}}`,
		"{\n\t\"mcpServers\": {\n\t\t\"other\": {\"command\": \"x\"},\n\t},\n}\n",
	} {
		got, err := upsertJSON([]byte(old), "mcpServers", entry, nil)
		if err != nil {
			t.Errorf("upsertJSON(%q) = %v", old, err)
			continue
		}
		if !strings.Contains(string(got), `"A": "<b>&"`) {
			t.Errorf("upsertJSON(%q) escaped or lost the value:\n%s", old, got)
		}
		back, err := removeJSON(got, "mcpServers", nil)
		if err != nil || strings.Contains(string(back), "openprogram") {
			t.Errorf("removeJSON after upsertJSON(%q) = %q, %v", old, back, err)
		}
	}
}
