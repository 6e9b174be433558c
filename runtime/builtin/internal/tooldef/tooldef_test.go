package tooldef_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
)

type args struct {
	Mode string `json:"mode"`
}

func newTool() *tool.Func {
	return tooldef.New("t", "d", `{"type":"object"}`, authz.CapFSRead,
		func(ctx context.Context, _ string, a args, _ func(string)) (tool.Result, error) {
			switch a.Mode {
			case "fail":
				return tool.Result{}, &tooldef.Failure{Reason: "NOPE", Msg: "no", Details: map[string]any{"extra": 1}}
			case "error":
				return tool.Result{}, errors.New("broken")
			case "json":
				return tooldef.JSON(map[string]string{"html": "<b>&</b>"})
			}
			return tool.TextResult("ok " + a.Mode), nil
		})
}

func TestNew(t *testing.T) {
	f := newTool()
	ctx := context.Background()
	run := func(raw string) (tool.Result, error) { return f.Execute(ctx, "c", json.RawMessage(raw), nil) }

	if res, err := run(`{"mode":"x"}`); err != nil || res.Text() != "ok x" {
		t.Errorf("run(x) = %+v, %v", res, err)
	}
	if res, err := run(``); err != nil || res.Text() != "ok " {
		t.Errorf("run(empty) = %+v, %v", res, err)
	}
	res, err := run(`{"mode":"fail"}`)
	want := tool.Result{Content: []tool.Content{tool.Text("no")}, IsError: true, Reason: "NOPE", Details: map[string]any{"extra": 1}}
	if diff := cmp.Diff(want, res); diff != "" || err != nil {
		t.Errorf("run(fail) err %v (-want +got):\n%s", err, diff)
	}
	if _, err := run(`{"mode":"error"}`); err == nil || err.Error() != "broken" {
		t.Errorf("run(error) = %v, want the error passed through", err)
	}
	if res, _ := run(`{"mode":"json"}`); res.Text() != `{"html":"<b>&</b>"}` {
		t.Errorf("JSON = %q, want compact without HTML escaping", res.Text())
	}
	if res, _ := run(`{"mode":3}`); !res.IsError || res.ReasonCode() != tool.ReasonInvalidArguments {
		t.Errorf("run(bad type) = %+v, want INVALID_ARGUMENTS", res)
	}
	if msg := tooldef.Fail("R", "a %d", 1).Error(); msg != "a 1" {
		t.Errorf("Fail message = %q", msg)
	}
}

func TestObject(t *testing.T) {
	got := tooldef.Object([]string{"path"}, `"path": {"type": "string"}`, `"limit": {"type": "integer"}`)
	want := `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "limit": {"type": "integer"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Object (-want +got):\n%s", diff)
	}
	empty := tooldef.Object(nil)
	wantEmpty := `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`
	if diff := cmp.Diff(wantEmpty, empty); diff != "" {
		t.Errorf("Object(nil) (-want +got):\n%s", diff)
	}
	for _, s := range []string{got, empty} {
		if !json.Valid([]byte(s)) {
			t.Errorf("Object gave invalid JSON:\n%s", s)
		}
	}
}
