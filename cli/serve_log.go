package cli

import (
	"io"
	"log/slog"
	"path/filepath"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// ServeLogFileName is the log file `mcp serve --log-file` appends to, in
// the state directory.
const ServeLogFileName = "mcp-serve.log"

// serveLogger builds the logger of `mcp serve`: level and format as given,
// to stderr and, with toFile, also to <stateDir>/mcp-serve.log. The returned
// function closes the file.
func serveLogger(app *App, stateDir, level, format string, toFile bool) (*slog.Logger, func(), error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, usagef("--log-level %q: use debug, info, warn or error", level)
	}
	var w io.Writer = app.Stderr
	closeFn := func() {}
	if toFile {
		f, err := privatefile.OpenAppend(filepath.Join(stateDir, ServeLogFileName))
		if err != nil {
			return nil, nil, err
		}
		w = io.MultiWriter(app.Stderr, f)
		closeFn = func() { f.Close() }
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), closeFn, nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), closeFn, nil
}
