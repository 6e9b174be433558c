package todo

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/tool"
)

// Item statuses.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusCancelled  = "cancelled"
)

// Reason codes the todo tools report in tool.Result.Reason.
const (
	ReasonNoSession = "NO_SESSION"
	ReasonNotFound  = "NOT_FOUND"
	ReasonTooMany   = "TOO_MANY"
)

// MaxItems bounds one session's list.
const MaxItems = 200

// Item is one todo of a session. IDs are "1", "2", ... per session.
type Item struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"`
}

// Store keeps todo lists per session, in memory. It is safe for
// concurrent use.
type Store struct {
	mu    sync.Mutex
	lists map[string]*list
}

type list struct {
	next  int
	items []Item
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{lists: map[string]*list{}} }

// Items returns a copy of the session's list.
func (s *Store) Items(sessionID string) []Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lists[sessionID]; l != nil {
		return slices.Clone(l.items)
	}
	return []Item{}
}

// Forget drops the session's list.
func (s *Store) Forget(sessionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lists, sessionID)
}

// Tools returns todo_create, todo_update and todo_list over store. Each
// call works on the list of the session in its tool.CallInfo.
func Tools(store *Store) []tool.Tool {
	return []tool.Tool{
		tooldef.New("todo_create", "Add an item to this session's todo list. Returns the new item and the whole list.",
			createSchema, authz.CapRuntimeControl, store.create),
		tooldef.New("todo_update", "Change the status or the text of an item of this session's todo list.",
			updateSchema, authz.CapRuntimeControl, store.update),
		tooldef.New("todo_list", "Show this session's todo list.",
			listSchema, authz.CapRuntimeControl, store.listItems),
	}
}

var createSchema = tooldef.Object([]string{"content"},
	`"content": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What to do."}`,
	`"status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"], "description": "Initial status. Default pending."}`,
)

const updateSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "id": {"type": "string", "minLength": 1, "description": "The item's id."},
    "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]},
    "content": {"type": "string", "minLength": 1, "maxLength": 2000}
  },
  "required": ["id"],
  "minProperties": 2,
  "additionalProperties": false
}`

var listSchema = tooldef.Object(nil)

type createArgs struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

type updateArgs struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Content string `json:"content"`
}

type out struct {
	Item  *Item  `json:"item,omitempty"`
	Items []Item `json:"items"`
}

func sessionOf(ctx context.Context) (string, error) {
	info, ok := tool.CallFrom(ctx)
	if !ok || info.SessionID == "" {
		return "", tooldef.Fail(ReasonNoSession, "todo tools need a session; none is attached to this call")
	}
	return info.SessionID, nil
}

func (s *Store) create(ctx context.Context, _ string, a createArgs, _ func(string)) (tool.Result, error) {
	sid, err := sessionOf(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	status := a.Status
	if status == "" {
		status = StatusPending
	}
	s.mu.Lock()
	l := s.lists[sid]
	if l == nil {
		l = &list{}
		s.lists[sid] = l
	}
	if len(l.items) >= MaxItems {
		s.mu.Unlock()
		return tool.Result{}, tooldef.Fail(ReasonTooMany, "the todo list already has %d items", MaxItems)
	}
	l.next++
	it := Item{ID: strconv.Itoa(l.next), Content: a.Content, Status: status}
	l.items = append(l.items, it)
	items := slices.Clone(l.items)
	s.mu.Unlock()
	return tooldef.JSON(out{Item: &it, Items: items})
}

func (s *Store) update(ctx context.Context, _ string, a updateArgs, _ func(string)) (tool.Result, error) {
	sid, err := sessionOf(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lists[sid]
	i := -1
	if l != nil {
		i = slices.IndexFunc(l.items, func(it Item) bool { return it.ID == a.ID })
	}
	if i < 0 {
		return tool.Result{}, tooldef.Fail(ReasonNotFound, "no todo item %q in this session; see todo_list", a.ID)
	}
	if a.Status != "" {
		l.items[i].Status = a.Status
	}
	if a.Content != "" {
		l.items[i].Content = a.Content
	}
	it := l.items[i]
	return tooldef.JSON(out{Item: &it, Items: slices.Clone(l.items)})
}

func (s *Store) listItems(ctx context.Context, _ string, _ struct{}, _ func(string)) (tool.Result, error) {
	sid, err := sessionOf(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	return tooldef.JSON(out{Items: s.Items(sid)})
}
