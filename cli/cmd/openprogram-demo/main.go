// Command openprogram-demo is `make run`: it drives `openprogram mcp serve`
// with a real MCP client through all six tools and prints what happens.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/openprogram/openprogram/cli/internal/demo"
)

func main() {
	bin := flag.String("bin", "bin/openprogram", "the openprogram binary")
	home := flag.String("home", ".demo/state", "the state directory to create afresh")
	flag.Parse()
	absBin, err := filepath.Abs(*bin)
	if err == nil {
		*bin = absBin
	}
	absHome, err := filepath.Abs(*home)
	if err == nil {
		*home = absHome
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := demo.Run(ctx, demo.Options{Binary: *bin, Home: *home, Out: os.Stdout}); err != nil {
		fmt.Fprintf(os.Stderr, "Error: demo: %v\n", err)
		stop()
		os.Exit(1)
	}
}
