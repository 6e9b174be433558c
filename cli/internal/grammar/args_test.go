package grammar

import (
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

func TestNegativeValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"config set agent.max_steps -3", "config set agent.max_steps -- -3"},
		{"config set model.temperature -.5", "config set model.temperature -- -.5"},
		{"config set x -1e3", "config set x -- -1e3"},
		{"sessions list -n -3", "sessions list -n -3"},     // a flag's value: kong's
		{"config set x -3 --raw", "config set x -3 --raw"}, // a flag follows
		{"config set x -- -3", "config set x -- -3"},       // already separated
		{"config set x -abc", "config set x -abc"},         // not a number
		{"config set x -", "config set x -"},               // not a number
		{"config set x -3 -4", "config set x -- -3 -4"},    // the run starts at the first
		{"audit tail -n 5", "audit tail -n 5"},             // no negative number
	} {
		got := NegativeValues(strings.Fields(tc.in))
		if !slices.Equal(got, strings.Fields(tc.want)) {
			t.Errorf("NegativeValues(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShowUsage(t *testing.T) {
	var cli struct {
		Token struct {
			Create struct{} `cmd:""`
			Path   struct{} `cmd:""`
		} `cmd:""`
		Version struct{} `cmd:""`
	}
	parser, err := kong.New(&cli, kong.Name("openprogram"))
	if err != nil {
		t.Fatal(err)
	}
	root := parser.Model.Node
	token := root.Children[0]
	for _, tc := range []struct {
		node *kong.Node
		args string
		want bool
	}{
		{root, "", true},                       // a bare call
		{root, "--home /x", true},              // flags only
		{root, "nope", true},                   // an unknown command
		{token, "token", true},                 // a group without its subcommand
		{token, "token nope", true},            // an unknown subcommand
		{token, "token create extra", false},   // the subcommand is there
		{root.Children[1], "version x", false}, // no group
	} {
		if got := ShowUsage(tc.node, strings.Fields(tc.args)); got != tc.want {
			t.Errorf("ShowUsage(%s, %q) = %v, want %v", tc.node.Name, tc.args, got, tc.want)
		}
	}
}
