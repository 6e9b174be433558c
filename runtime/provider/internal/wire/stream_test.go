package wire

import (
	"testing"

	"github.com/openprogram/openprogram/runtime/provider"
)

func TestReply(t *testing.T) {
	var deltas []string
	r := NewReply(func(d provider.Delta) { deltas = append(deltas, d.Text) })
	r.Text("he")
	r.Text("")
	r.Text("llo")
	a := r.NewCall("c1", "read")
	a.Args.WriteString(` {"path":`)
	a.Args.WriteString(`"x"} `)
	r.NewCall("c2", "list")
	resp := r.Response(provider.StopToolUse, &provider.Usage{InputTokens: 3})
	if resp.Text != "hello" || len(deltas) != 2 || resp.StopReason != provider.StopToolUse || resp.Usage.InputTokens != 3 {
		t.Errorf("Response = %+v, deltas %q", resp, deltas)
	}
	if len(resp.ToolCalls) != 2 || string(resp.ToolCalls[0].Arguments) != `{"path":"x"}` || string(resp.ToolCalls[1].Arguments) != `{}` ||
		resp.ToolCalls[1].ID != "c2" || resp.ToolCalls[1].Name != "list" {
		t.Errorf("ToolCalls = %+v", resp.ToolCalls)
	}
	if got := NewReply(nil); got.Response("end", nil).ToolCalls != nil {
		t.Errorf("empty reply has tool calls")
	}
}
