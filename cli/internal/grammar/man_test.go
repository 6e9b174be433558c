package grammar

import (
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// The man page documents every key from the one key table, secrets marked.
func TestManPageListsEveryConfigKey(t *testing.T) {
	parser, err := kong.New(&struct{}{}, kong.Name("openprogram"), kong.Description("OpenProgram: a test."))
	if err != nil {
		t.Fatal(err)
	}
	page := ManPage(parser.Model.Node, Page{Version: "test"})
	_, section, _ := strings.Cut(page, ".SH CONFIGURATION\n")
	section, _, _ = strings.Cut(section, ".SH ")
	for _, k := range settings.Keys() {
		if !strings.Contains(section, ".B "+roffText(k.Name)+"\n") {
			t.Errorf("the CONFIGURATION section lacks %s", k.Name)
		}
	}
	if n := strings.Count(section, "unless \\-\\-show\\-secrets"); n != 4 {
		t.Errorf("%d keys marked secret in the man page, want 4 (telemetry.endpoint, store.url, model.base_url, model.headers):\n%s", n, section)
	}
}
