package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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
		f, err := openLogFile(filepath.Join(stateDir, ServeLogFileName))
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

// openLogFile opens path to append to, creating it with mode 0600: the one
// way a log file in the state directory is opened. It refuses what is not a
// regular file, a file swapped while it was opened, and one open to others.
func openLogFile(path string) (*os.File, error) {
	before, lerr := os.Lstat(path)
	if lerr == nil && !before.Mode().IsRegular() {
		return nil, fmt.Errorf("the log file %s is not a regular file; remove it", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the log file %s: %w", path, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil || (lerr == nil && !os.SameFile(before, fi)):
		f.Close()
		return nil, fmt.Errorf("the log file %s changed while it was opened; try again", path)
	case fi.Mode().Perm()&0o077 != 0:
		f.Close()
		return nil, fmt.Errorf("the log file %s is open to others; run: chmod 600 %s", path, path)
	}
	return f, nil
}
