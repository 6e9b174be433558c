// Package todo implements todo_create, todo_update and todo_list: a todo
// list per session, kept in memory by a [Store].
//
//	store := todo.NewStore()
//	for _, t := range todo.Tools(store) {
//		if err := reg.Register(t); err != nil {
//			return err
//		}
//	}
//	items := store.Items(sessionID)
//
// The session is the one in the call's tool.CallInfo; a call without one
// fails with NO_SESSION.
package todo
