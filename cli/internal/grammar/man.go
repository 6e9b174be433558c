// Package grammar is what the openprogram command line knows about its own
// grammar, the kong model, beyond what kong does: which words a parse should
// see ([NegativeValues]: a negative number is a value, not a flag), when a
// mistake should show a command group's usage ([ShowUsage]), and the
// renderings other programs read, the manual page in roff ([ManPage]) and
// the completion scripts of bash, zsh, fish and PowerShell ([Completion]). The
// renderings are generated from the model itself (and from the one table of
// config keys), so neither drifts from the commands.
package grammar

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// Page is what the manual page says besides the commands, their flags and
// the config keys.
type Page struct {
	// Version is the build's version, Date its date (RFC 3339: the day is
	// kept; "" = none).
	Version, Date string
	// Environment are the variables the command reads that no flag
	// names, with what each does.
	Environment []Entry
	// Files are the files of the state directory, with what each is.
	Files []Entry
}

// Entry is one tagged paragraph of the page: a name and what it is.
type Entry struct{ Name, Text string }

// ManPage renders openprogram(1): the root node and every visible command
// below it, the environment, the config keys and the files of p.
func ManPage(root *kong.Node, p Page) string {
	var b strings.Builder
	date := p.Date
	if i := strings.IndexByte(date, 'T'); i > 0 {
		date = date[:i]
	}
	fmt.Fprintf(&b, ".TH OPENPROGRAM 1 %s %s \"User Commands\"\n", roffQuote(date), roffQuote("openprogram "+p.Version))
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
	for _, e := range p.Environment {
		b.WriteString(".TP\n.B " + roffText(e.Name) + "\n" + roffText(e.Text) + "\n")
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
	for _, f := range p.Files {
		b.WriteString(".TP\n.I " + roffText("~/.openprogram/"+f.Name) + "\n" + roffText(f.Text) + "\n")
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

// hasCommands reports whether n is a command group: it has a visible
// subcommand.
func hasCommands(n *kong.Node) bool {
	for _, c := range n.Children {
		if c.Type == kong.CommandNode && !c.Hidden {
			return true
		}
	}
	return false
}
