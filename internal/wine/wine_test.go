package wine_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/openprogram/openprogram/internal/wine"
)

// TestDetected checks the probe against what the harness says: the Wine
// exec wrapper sets WINEPREFIX, which Windows never has.
func TestDetected(t *testing.T) {
	want := runtime.GOOS == "windows" && os.Getenv("WINEPREFIX") != ""
	if got := wine.Detected(); got != want {
		t.Errorf("Detected() = %v, want %v (GOOS %s, WINEPREFIX %q)", got, want, runtime.GOOS, os.Getenv("WINEPREFIX"))
	}
}
