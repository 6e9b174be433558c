// Package winebin runs the Windows build of the openprogram command,
// openprogram.exe cross-compiled from this checkout, under Wine through the
// repository's harness (scripts/wine): the steps a Windows user takes, from
// `mcp token create` to `doctor`. It needs the Wine prefix `make wine-setup`
// prepares; without it the test skips, unless OPENPROGRAM_WINE_E2E=1 (as
// `make test-windows-binary` sets), where that is a failure.
package winebin
