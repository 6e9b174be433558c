package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// The man page documents every key from the one key table, secrets marked.
func TestManPageListsEveryConfigKey(t *testing.T) {
	var out, errb strings.Builder
	env := Env{"OPENPROGRAM_HOME=" + filepath.Join(t.TempDir(), "state")}
	if code := Main(t.Context(), &App{Stdout: &out, Stderr: &errb, Env: env, Version: "test"}, []string{"man"}); code != 0 {
		t.Fatalf("man = exit %d: %s", code, errb.String())
	}
	page := out.String()
	_, section, _ := strings.Cut(page, ".SH CONFIGURATION\n")
	section, _, _ = strings.Cut(section, ".SH ")
	for _, k := range settings.Keys() {
		if !strings.Contains(section, ".B "+roffText(k.Name)+"\n") {
			t.Errorf("the CONFIGURATION section lacks %s", k.Name)
		}
	}
	if n := strings.Count(section, "unless \\-\\-show\\-secrets"); n != 3 {
		t.Errorf("%d keys marked secret in the man page, want 3 (store.url, model.base_url, model.headers):\n%s", n, section)
	}
}
