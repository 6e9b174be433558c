package grammar

import (
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
)

// NegativeValues lets a negative number be a value: kong reads "-3" as a
// short flag, though no flag of the grammar is a digit. When the arguments
// end in a run of plain words holding a negative number (`config set
// agent.max_steps -3`), a "--" goes before that number so that it reaches
// the command, and its validator, as a value. A number right after a flag
// is that flag's value and is left to kong.
func NegativeValues(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args
		}
		if !isNegativeNumber(a) {
			continue
		}
		if i > 0 && strings.HasPrefix(args[i-1], "-") && !isNegativeNumber(args[i-1]) {
			return args
		}
		for _, rest := range args[i+1:] {
			if strings.HasPrefix(rest, "-") && !isNegativeNumber(rest) {
				return args
			}
		}
		return slices.Insert(slices.Clone(args), i, "--")
	}
	return args
}

// isNegativeNumber reports whether s is a number with a minus sign: -3,
// -0.5, -.5, -1e3.
func isNegativeNumber(s string) bool {
	if len(s) < 2 || s[0] != '-' || !(s[1] >= '0' && s[1] <= '9' || s[1] == '.') {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// ShowUsage reports whether a parse that failed at node should show node's
// usage: node is a command group, and the words of args stop at it (no
// subcommand given) or go on with a word that is none of its commands.
func ShowUsage(node *kong.Node, args []string) bool {
	return hasCommands(node) && commandMissing(node, args)
}

// commandMissing reports whether the words of args stop at node (no
// subcommand given) or go on with a word that is none of its commands.
func commandMissing(node *kong.Node, args []string) bool {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	depth := 0
	if node.Type == kong.CommandNode {
		depth = len(strings.Fields(node.Path()))
	}
	if len(words) <= depth {
		return true
	}
	for _, c := range node.Children {
		if c.Type == kong.CommandNode && c.Name == words[depth] {
			return false
		}
	}
	return true
}
