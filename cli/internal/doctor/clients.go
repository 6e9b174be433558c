package doctor

import (
	"crypto/subtle"
	"strings"

	"github.com/openprogram/openprogram/cli/internal/clients"
	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/internal/shell"
	"github.com/openprogram/openprogram/tokenauth"
)

// clientChecks checks each client's user configuration that holds our
// entry: the binary it starts exists, a token it holds literally is the
// current one, and each variable it forwards is set here (doctor runs in
// the environment the user starts clients from, or should).
func clientChecks(env settings.Env, stateDir string) []Check {
	token, tokenErr := tokenauth.Read(tokenauth.Path(stateDir))
	var checks []Check
	for _, in := range clients.Installations(env) {
		if info, fix := openClientFile(in.Path, in.Mode); info != "" && in.HoldsSecrets {
			// Install wrote it owner-only; the client saved it again under its umask.
			checks = append(checks, Check{Name: "client " + in.Client,
				Info: in.Path + " holds the MCP token (and any model key) and " + info + ": other users can read them",
				Fix:  fix})
			continue
		}
		checks = append(checks, clientCheck(env, in, token, tokenErr == nil))
	}
	return checks
}

// clientCheck is the one finding for one installed client.
func clientCheck(env settings.Env, in clients.Installation, token string, haveToken bool) Check {
	name := "client " + in.Client
	reinstall := "openprogram mcp install --client " + in.Client
	if !clients.IsProgram(in.Command) {
		return Check{Name: name, Info: in.Path + " starts " + in.Command + ", which is not an executable file",
			Fix: "run " + reinstall + " with the openprogram binary you use now"}
	}
	if v, ok := in.Literals[tokenauth.EnvVar]; ok && haveToken && !strings.HasPrefix(v, "${input:") &&
		subtle.ConstantTimeCompare([]byte(v), []byte(token)) != 1 {
		return Check{Name: name, Info: in.Path + " holds an old MCP token (rotated since)", Fix: "run " + reinstall}
	}
	var unset []string
	for _, v := range in.Forward {
		if env.Get(v) == "" {
			unset = append(unset, v)
		}
	}
	if len(unset) > 0 {
		var exports []string
		for _, v := range unset {
			if v == tokenauth.EnvVar {
				exports = append(exports, shell.Native.Export(v, shell.Native.FileContent(shell.Native.Output([]string{"openprogram", "mcp", "token", "path"}))))
			} else {
				exports = append(exports, shell.Native.Export(v, shell.Native.Quote("<value>")))
			}
		}
		fix := "in the shell profile " + clients.Title(in.Client) + " starts from: " + strings.Join(exports, "; ")
		return Check{Name: name, Warn: true, Info: in.Path + " forwards " + strings.Join(unset, ", ") + ", not set in this environment", Fix: fix}
	}
	return Check{Name: name, OK: true, Info: in.Path + ": binary found, secrets current or forwarded"}
}
