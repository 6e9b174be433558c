package todo_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/todo"
	"github.com/openprogram/openprogram/runtime/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type out struct {
	Item  *todo.Item  `json:"item"`
	Items []todo.Item `json:"items"`
}

func setup(t *testing.T) (*todo.Store, func(session, name string, args any) (tool.Result, out)) {
	store := todo.NewStore()
	reg := tool.NewRegistry()
	for _, tl := range todo.Tools(store) {
		if tl.Capability() != authz.ToolCapability(tl.Name()) {
			t.Errorf("%s declares %s, the authz table says %s", tl.Name(), tl.Capability(), authz.ToolCapability(tl.Name()))
		}
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	ex := tool.NewExecutor(nil)
	return store, func(session, name string, args any) (tool.Result, out) {
		t.Helper()
		tl, _ := reg.Get(name)
		raw, _ := json.Marshal(args)
		ctx := context.Background()
		if session != "" {
			ctx = tool.WithCall(ctx, tool.CallInfo{SessionID: session})
		}
		res := ex.Execute(ctx, tl, "c", raw, nil)
		var o out
		if !res.IsError {
			if err := json.Unmarshal([]byte(res.Text()), &o); err != nil {
				t.Fatalf("%s result %q: %v", name, res.Text(), err)
			}
		}
		return res, o
	}
}

func TestTodoPerSession(t *testing.T) {
	store, call := setup(t)
	_, o := call("s1", "todo_create", map[string]any{"content": "write tests"})
	if diff := cmp.Diff(&todo.Item{ID: "1", Content: "write tests", Status: todo.StatusPending}, o.Item); diff != "" {
		t.Errorf("todo_create (-want +got):\n%s", diff)
	}
	call("s1", "todo_create", map[string]any{"content": "ship", "status": "in_progress"})
	call("s2", "todo_create", map[string]any{"content": "other session"})

	_, o = call("s1", "todo_update", map[string]any{"id": "1", "status": "completed"})
	want := []todo.Item{{ID: "1", Content: "write tests", Status: "completed"}, {ID: "2", Content: "ship", Status: "in_progress"}}
	if diff := cmp.Diff(want, o.Items); diff != "" {
		t.Errorf("after todo_update (-want +got):\n%s", diff)
	}
	_, o = call("s1", "todo_update", map[string]any{"id": "2", "content": "ship it"})
	if o.Item.Content != "ship it" || o.Item.Status != "in_progress" {
		t.Errorf("content update = %+v", o.Item)
	}
	_, o = call("s2", "todo_list", map[string]any{})
	if diff := cmp.Diff([]todo.Item{{ID: "1", Content: "other session", Status: "pending"}}, o.Items); diff != "" {
		t.Errorf("todo_list s2 (-want +got):\n%s", diff)
	}
	if got := store.Items("s1"); len(got) != 2 {
		t.Errorf("Items(s1) = %+v", got)
	}
	_, o = call("s3", "todo_list", map[string]any{})
	if o.Items == nil || len(o.Items) != 0 {
		t.Errorf("todo_list of an empty session = %#v, want []", o.Items)
	}
	store.Forget("s1")
	if got := store.Items("s1"); len(got) != 0 {
		t.Errorf("Items after Forget = %+v", got)
	}
}

func TestTodoFailures(t *testing.T) {
	_, call := setup(t)
	for name, c := range map[string]struct {
		session, tool string
		args          any
		reason        string
	}{
		"no session":     {"", "todo_list", map[string]any{}, todo.ReasonNoSession},
		"unknown id":     {"s", "todo_update", map[string]any{"id": "9", "status": "completed"}, todo.ReasonNotFound},
		"nothing to set": {"s", "todo_update", map[string]any{"id": "1"}, tool.ReasonInvalidArguments},
		"bad status":     {"s", "todo_create", map[string]any{"content": "x", "status": "done"}, tool.ReasonInvalidArguments},
		"empty content":  {"s", "todo_create", map[string]any{"content": ""}, tool.ReasonInvalidArguments},
	} {
		res, _ := call(c.session, c.tool, c.args)
		if !res.IsError || res.ReasonCode() != c.reason {
			t.Errorf("%s: %+v, want %s", name, res, c.reason)
		}
	}
	for range todo.MaxItems {
		call("full", "todo_create", map[string]any{"content": "x"})
	}
	if res, _ := call("full", "todo_create", map[string]any{"content": "one too many"}); res.ReasonCode() != todo.ReasonTooMany {
		t.Errorf("over MaxItems = %+v", res)
	}
}

func TestTodoConcurrentCreatesGetDistinctIDs(t *testing.T) {
	store, call := setup(t)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { call("s", "todo_create", map[string]any{"content": "x"}) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, it := range store.Items("s") {
		if seen[it.ID] {
			t.Fatalf("duplicate id %s", it.ID)
		}
		seen[it.ID] = true
	}
	if len(seen) != 50 {
		t.Errorf("%d items, want 50", len(seen))
	}
}
