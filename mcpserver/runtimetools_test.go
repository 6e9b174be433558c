package mcpserver

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime/tool"
)

func TestToMCPContent(t *testing.T) {
	good := []tool.Content{tool.Text("hi"), tool.Image([]byte{1, 2}, "image/png"), tool.Image([]byte{3}, "image/svg+xml")}
	got, err := toMCPContent(good)
	if err != nil {
		t.Fatal(err)
	}
	want := []mcp.Content{
		&mcp.TextContent{Text: "hi"},
		&mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"},
		&mcp.ImageContent{Data: []byte{3}, MIMEType: "image/svg+xml"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("toMCPContent (-want +got):\n%s", diff)
	}
	for _, bad := range [][]tool.Content{
		{tool.Image([]byte{1}, "text/plain")},
		{tool.Image([]byte{1}, "image/")},
		{tool.Image([]byte{1}, "image/png; charset=x")},
		{tool.Image([]byte{1}, "image/p ng")},
		{tool.Image([]byte{1}, "image/pñg")},
		{tool.Image(nil, "image/png")},
		{{Type: "audio", Data: []byte{1}, MediaType: "audio/wav"}},
		{{Type: "", Text: "untyped"}},
	} {
		if got, err := toMCPContent(bad); err == nil {
			t.Errorf("toMCPContent(%+v) = %v, want an error", bad, got)
		}
	}
}

func TestDeniedText(t *testing.T) {
	for _, tt := range []struct {
		d    authz.Decision
		want string
	}{
		{authz.Decision{ReasonCode: authz.ReasonHardConstraint, Capability: authz.CapProcessExec}, contracts.TextDeniedHardConstraint},
		{authz.Decision{ReasonCode: authz.ReasonCapability, Capability: authz.CapFSRead}, "[denied] authority tier does not allow fs.read"},
		{authz.Decision{ReasonCode: authz.ReasonRuleDeny}, contracts.TextDeniedPermissionRule},
		{authz.Decision{ReasonCode: authz.ReasonApprovalUnavailable}, contracts.TextDeniedApprovalUnavailable},
		{authz.Decision{ReasonCode: authz.ReasonApprovalRequired}, contracts.TextDeniedApprovalUnavailable},
		{authz.Decision{ReasonCode: "APPROVAL_DENIED"}, contracts.TextDeniedApprovalUnavailable},
	} {
		if got := deniedText(tt.d); got != tt.want {
			t.Errorf("deniedText(%s) = %q, want %q", tt.d.ReasonCode, got, tt.want)
		}
	}
}

func TestResolveExposed(t *testing.T) {
	reg := tool.NewRegistry()
	for _, ft := range []*fakeTool{
		{name: "memory_search", cap: authz.CapMemoryRead},
		{name: "memory_update", cap: authz.CapMemorySourceAppend},
		{name: "read", cap: authz.CapFSRead},
		// Declares a paired capability, but the contract table maps the name
		// to process.exec: hidden, as the gate would deny it.
		{name: "sneaky", cap: authz.CapMemoryRead},
	} {
		if err := reg.Register(ft); err != nil {
			t.Fatal(err)
		}
	}
	got := ResolveExposed(reg, []string{"memory_update", "read", "nope", "sneaky", "memory_search", "memory_update"})
	type row struct{ name, hidden string }
	var rows []row
	for _, e := range got {
		if (e.Tool == nil) != (e.Name == "nope") {
			t.Errorf("%s: Tool = %v", e.Name, e.Tool)
		}
		rows = append(rows, row{e.Name, e.Hidden})
	}
	want := []row{
		{"memory_update", ""},
		{"read", "needs fs.read, which the paired tier of MCP clients does not hold"},
		{"nope", "not a registered runtime tool"},
		{"sneaky", "needs process.exec, which the paired tier of MCP clients does not hold"},
		{"memory_search", ""},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("ResolveExposed =\n%v\nwant\n%v", rows, want)
	}
}
