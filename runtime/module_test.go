package runtime_test

import (
	"os"
	"strings"
	"testing"
)

// TestGoModHasNoPostgresDriver: the runtime works on any sessions.Store and
// its tests use SQLite only (the PostgreSQL runs live in the cli module), so
// go.mod must not require the PostgreSQL driver, not even indirectly.
func TestGoModHasNoPostgresDriver(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatalf("read go.mod: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, "github.com/jackc/") {
			t.Errorf("go.mod requires %q: a runtime test imports sessions/postgres; move it to the cli module", strings.TrimSpace(line))
		}
	}
}
