// Command openprogram is the OpenProgram agent runtime's command line; its
// main job is `openprogram mcp serve`, an authenticated stdio MCP server.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/openprogram/openprogram/cli"
)

// Set with -ldflags "-X main.version=... -X main.commit=... -X main.date=..."
// by make build and make dist; debug.ReadBuildInfo fills in what is unset.
var version, commit, date = "", "", ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, &cli.App{
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Env:        os.Environ(),
		Version:    buildVersion(),
		Commit:     buildSetting(commit, "vcs.revision"),
		Date:       buildSetting(date, "vcs.time"),
		Executable: executable(),
	}, os.Args[1:])
	stop()
	os.Exit(code)
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// buildSetting returns v, else the named setting the Go toolchain recorded.
func buildSetting(v, key string) string {
	if v != "" {
		return v
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == key {
				return s.Value
			}
		}
	}
	return ""
}

func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return exe
}
