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
	r.NewCall(0, "c1", "read").Args.WriteString(` {"path":`)
	r.Call(0).Args.WriteString(`"x"} `)
	r.NewCall(1, "c2", "list")
	if r.Call(2) != nil {
		t.Errorf("Call(2) = %+v, want nil", r.Call(2))
	}
	r.Stop, r.Usage = "calls", &provider.Usage{InputTokens: 3}
	resp := r.Response(map[string]string{"calls": provider.StopToolUse})
	if resp.Text != "hello" || len(deltas) != 2 || resp.StopReason != provider.StopToolUse || resp.Usage.InputTokens != 3 {
		t.Errorf("Response = %+v, deltas %q", resp, deltas)
	}
	if len(resp.ToolCalls) != 2 || string(resp.ToolCalls[0].Arguments) != `{"path":"x"}` || string(resp.ToolCalls[1].Arguments) != `{}` ||
		resp.ToolCalls[1].ID != "c2" || resp.ToolCalls[1].Name != "list" {
		t.Errorf("ToolCalls = %+v", resp.ToolCalls)
	}
	empty := NewReply(nil)
	empty.Stop = "odd"
	if got := empty.Response(nil); got.ToolCalls != nil || got.StopReason != "odd" {
		t.Errorf("empty reply = %+v, want no tool calls and the unknown stop reason as it came", got)
	}
}
