package cli

import (
	"fmt"
	goruntime "runtime"
)

type versionCmd struct{}

func (versionCmd) Run(app *App) error {
	_, err := fmt.Fprintln(app.Stdout, versionText(app))
	return err
}

// versionText is what `version` and `--version` print.
func versionText(app *App) string {
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	return fmt.Sprintf("openprogram %s\ncommit %s\nbuilt %s\n%s %s/%s",
		app.Version, orUnknown(app.Commit), orUnknown(app.Date), goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
}
