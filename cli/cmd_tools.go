package cli

import (
	"context"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// newRegistry builds the live runtime tool registry: the built-in tools on
// store, confined to workDirs.
func newRegistry(store sessions.Store, workDirs []string) (*tool.Registry, error) {
	reg := tool.NewRegistry()
	if err := builtin.Register(reg, builtin.Deps{Store: store, WorkDirs: workDirs}); err != nil {
		return nil, fmt.Errorf("register the built-in tools: %w", err)
	}
	return reg, nil
}

// exposure is how one configured exposed_tools entry resolves.
type exposure struct {
	name    string
	visible bool   // in exposed ∩ registry ∩ paired
	why     string // when not visible
}

// resolveExposed walks mcp_server.exposed_tools in order, duplicates dropped,
// and says which names MCP clients will see and why the others will not.
func resolveExposed(reg *tool.Registry, exposed []string) []exposure {
	var out []exposure
	seen := map[string]bool{}
	for _, name := range exposed {
		if seen[name] {
			continue
		}
		seen[name] = true
		t, ok := reg.Get(name)
		switch {
		case !ok:
			out = append(out, exposure{name: name, why: "not a registered runtime tool"})
		case !authz.TierPaired.Has(t.Capability()):
			out = append(out, exposure{name: name, why: fmt.Sprintf("needs %s, which the paired tier of MCP clients does not hold", t.Capability())})
		default:
			out = append(out, exposure{name: name, visible: true})
		}
	}
	return out
}

type toolsCmd struct {
	List toolsListCmd `cmd:"" help:"List the runtime tools and whether MCP clients can see them."`
}

type toolsListCmd struct {
	Exposed bool `help:"Only the tools MCP clients see (mcp_server.exposed_tools ∩ registry ∩ paired tier), in configured order."`
}

func (c *toolsListCmd) Run(ctx context.Context, app *App) error {
	cfg, st, err := openAppStore(ctx, app)
	if err != nil {
		return err
	}
	defer st.Close()
	reg, err := newRegistry(st, cfg.Strings("agent.work_dirs"))
	if err != nil {
		return err
	}
	resolved := resolveExposed(reg, cfg.Strings("mcp_server.exposed_tools"))
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	if c.Exposed {
		fmt.Fprintln(tw, "NAME\tCAPABILITY")
		for _, e := range resolved {
			if e.visible {
				t, _ := reg.Get(e.name)
				fmt.Fprintf(tw, "%s\t%s\n", e.name, t.Capability())
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, e := range resolved {
			if !e.visible {
				fmt.Fprintf(app.Stderr, "note: %s is in mcp_server.exposed_tools but hidden from MCP clients: %s\n", e.name, e.why)
			}
		}
		return nil
	}
	visible := map[string]bool{}
	for _, e := range resolved {
		visible[e.name] = e.visible
	}
	fmt.Fprintln(tw, "NAME\tCAPABILITY\tMCP")
	for _, t := range reg.List() {
		mcp := "-"
		switch {
		case visible[t.Name()]:
			mcp = "exposed"
		case slices.Contains(cfg.Strings("mcp_server.exposed_tools"), t.Name()):
			mcp = "listed, but the paired tier lacks " + string(t.Capability())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name(), t.Capability(), mcp)
	}
	return tw.Flush()
}
