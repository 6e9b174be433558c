package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/sessions"
)

// listingStore stands in for the session store when the registry is built
// only to be listed (tools list): the memory tools are registered over it
// as mcp serve registers them over the real store. Listing calls no tool; a
// call would panic on the nil embedded Store, so it is never handed to
// anything that runs tools.
type listingStore struct{ sessions.Store }

type toolsCmd struct {
	List toolsListCmd `cmd:"" help:"List the runtime tools and whether MCP clients can see them."`
}

type toolsListCmd struct {
	Exposed bool `help:"Only the tools MCP clients see (mcp_server.exposed_tools ∩ registry ∩ paired tier), in configured order."`
}

// Run lists the tools from the configuration alone: it opens no store
// (listing calls no tool), so it creates and changes nothing, and works
// before the first mcp serve.
func (c *toolsListCmd) Run(app *App) error {
	cfg, _, err := loadAppConfig(app)
	if err != nil {
		return err
	}
	reg, err := host.NewRegistry(listingStore{}, cfg.Config, app.Logger)
	if err != nil {
		return err
	}
	resolved := mcpserver.ResolveExposed(reg, cfg.MCPServer.ExposedTools)
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	if c.Exposed {
		fmt.Fprintln(tw, "NAME\tCAPABILITY")
		for _, e := range resolved {
			if e.Hidden == "" {
				fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.Tool.Capability())
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, e := range resolved {
			if e.Hidden != "" {
				fmt.Fprintf(app.Stderr, "note: %s is in mcp_server.exposed_tools but hidden from MCP clients: %s\n", e.Name, e.Hidden)
			}
		}
		return nil
	}
	byName := map[string]mcpserver.Exposure{}
	for _, e := range resolved {
		byName[e.Name] = e
	}
	fmt.Fprintln(tw, "NAME\tCAPABILITY\tMCP")
	for _, t := range reg.List() {
		mcp := "-"
		if e, listed := byName[t.Name()]; listed {
			mcp = "exposed"
			if e.Hidden != "" {
				mcp = "listed, but hidden: " + e.Hidden
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name(), t.Capability(), mcp)
	}
	return tw.Flush()
}
