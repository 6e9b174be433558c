package mcpserver

import (
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
