package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/tokenauth"
)

// manCmd prints the manual page. It is hidden: `make dist` runs it to put
// openprogram.1 into the release archive, and nobody needs it at a prompt.
type manCmd struct{}

// Run prints openprogram(1) in roff, generated from the command grammar (as
// the completion scripts are) so that it never drifts from the commands.
func (manCmd) Run(ctx context.Context, app *App) error {
	var cmd root
	parser, err := newParser(ctx, app, &cmd)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(app.Stdout, manPage(parser.Model.Node, app))
	return err
}

// manPage renders the root node and every visible command below it.
func manPage(root *kong.Node, app *App) string {
	var b strings.Builder
	date := app.Date
	if i := strings.IndexByte(date, 'T'); i > 0 {
		date = date[:i]
	}
	fmt.Fprintf(&b, ".TH OPENPROGRAM 1 %s %s \"User Commands\"\n", roffQuote(date), roffQuote("openprogram "+app.Version))
	first, rest, _ := strings.Cut(root.Help, "\n")
	summary := strings.TrimSuffix(strings.TrimPrefix(first, "OpenProgram: "), ".")
	b.WriteString(".SH NAME\nopenprogram \\- " + roffText(summary) + "\n")
	b.WriteString(".SH SYNOPSIS\n.B openprogram\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]\n")
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(roffText(first) + "\n")
	for _, para := range strings.Split(strings.TrimSpace(rest), "\n\n") {
		b.WriteString(".PP\n.nf\n" + roffText(para) + "\n.fi\n")
	}
	b.WriteString(".SH GLOBAL OPTIONS\n")
	for _, f := range root.Flags {
		manFlag(&b, f)
	}
	b.WriteString(".SH COMMANDS\n")
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			if c.Type != kong.CommandNode || c.Hidden {
				continue
			}
			if hasCommands(c) {
				walk(c)
				continue
			}
			usage := "openprogram " + c.Path()
			for _, p := range c.Positional {
				arg := strings.ToUpper(p.Name)
				if p.Enum != "" {
					arg = strings.ReplaceAll(p.Enum, ",", "|")
				}
				if !p.Required {
					arg = "[" + arg + "]"
				}
				usage += " " + arg
			}
			b.WriteString(".SS " + roffQuote(usage) + "\n" + roffText(c.Help) + "\n")
			if c.Detail != "" {
				b.WriteString(".PP\n" + roffText(c.Detail) + "\n")
			}
			for _, f := range c.Flags {
				manFlag(&b, f)
			}
		}
	}
	walk(root)
	b.WriteString(".SH ENVIRONMENT\n")
	for _, e := range [][2]string{
		{EnvHome, "The state directory (default ~/.openprogram)."},
		{EnvProfile, "Use ~/.openprogram-NAME as the state directory."},
		{tokenauth.EnvVar, "The MCP token mcp serve compares with the token file before it reads stdin."},
		{EnvDatabaseURL, "The store URL; replaces store.url of config.json."},
		{"OPENPROGRAM_LOG_LEVEL, OPENPROGRAM_LOG_FORMAT", "The defaults of mcp serve's --log-level and --log-format."},
	} {
		b.WriteString(".TP\n.B " + roffText(e[0]) + "\n" + roffText(e[1]) + "\n")
	}
	for _, o := range settings.ModelEnvOverrides() {
		b.WriteString(".TP\n.B " + o.Env + "\n" + roffText("Overrides "+o.Key+" of config.json for the commands that run turns; empty means unset.") + "\n")
	}
	b.WriteString(".SH CONFIGURATION\n" + roffText("The keys of config.json (openprogram config list shows their values):") + "\n")
	for _, k := range settings.Keys() {
		text := k.Help + " Default: " + settings.Encode(k.Default) + "."
		if k.Secret {
			text += " Hidden by config get and list unless --show-secrets."
		}
		b.WriteString(".TP\n.B " + roffText(k.Name) + "\n" + roffText(text) + "\n")
	}
	b.WriteString(".SH FILES\n")
	for _, f := range [][2]string{
		{tokenauth.FileName, "the MCP token (mode 0600); mcp serve compares " + tokenauth.EnvVar + " with it"},
		{ConfigFileName, "the settings config get, set, unset and list read and change"},
		{DatabaseFileName, "the SQLite store: sessions, memory, audit log"},
		{tokenauth.KeyFileName, "the audit chain's key; keep its backup apart from the database's"},
		{tokenauth.AnchorFileName, "the last audit head this install saw; a log that does not extend it is refused (audit reanchor --yes after a deliberate restore)"},
		{authz.OwnerFileName, "the install's owner principal"},
		{TaskLogFileName, "the log of the detached runners of durable MCP tasks (mode 0600)"},
	} {
		b.WriteString(".TP\n.I " + roffText("~/.openprogram/"+f[0]) + "\n" + roffText(f[1]) + "\n")
	}
	b.WriteString(".SH EXIT STATUS\n0 success, 1 failure, 2 usage (an unknown command, flag or config key, an invalid value).\n")
	b.WriteString(".SH SEE ALSO\nThe README and docs/ that come with the release archive: docs/contract.md, docs/operations.md.\n")
	return b.String()
}

// manFlag writes one visible flag as a tagged paragraph: its forms, its
// placeholder, its help, and the variable it defaults from.
func manFlag(b *strings.Builder, f *kong.Flag) {
	if f.Hidden {
		return
	}
	tag := `\fB` + roffText("--"+f.Name) + `\fR`
	if f.Short != 0 {
		tag = `\fB` + roffText("-"+string(f.Short)) + `\fR, ` + tag
	}
	if !f.IsBool() {
		tag += `=\fI` + roffText(f.FormatPlaceHolder()) + `\fR`
	}
	help := f.Help
	if len(f.Envs) > 0 {
		help += " (environment: " + strings.Join(f.Envs, ", ") + ")"
	}
	b.WriteString(".TP\n" + tag + "\n" + roffText(help) + "\n")
}

// roffText escapes s for roff running text: backslashes and hyphens are
// escaped, a character outside ASCII becomes its \[uXXXX] escape (roff reads
// bytes, not UTF-8), and a line that would start with a control character is
// guarded.
func roffText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > 0x7e:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	s = b.String()
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// roffQuote is s as one double-quoted macro argument.
func roffQuote(s string) string {
	return `"` + strings.ReplaceAll(roffText(s), `"`, `\(dq`) + `"`
}
