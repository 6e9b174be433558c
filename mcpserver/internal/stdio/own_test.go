package stdio

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Methods in Options.Handlers are answered by the connection itself, after
// initialization like any request: a handler's result or error is written;
// notifications/cancelled ends its context and the answer is the code-0
// cancellation; a panic is -32603; before initialize it is -32600.
func TestOwnHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		var out syncBuffer
		c := New(inR, &out, Options{Methods: allMethods, Handlers: map[string]Handler{
			"x/echo": func(_ context.Context, _ *Request, p json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
				return p, nil
			},
			"x/block": func(ctx context.Context, _ *Request, _ json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
				<-ctx.Done()
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "too late"}
			},
			"x/panic": func(context.Context, *Request, json.RawMessage) (json.RawMessage, *jsonrpc.Error) { panic("boom") },
		}})
		send := func(line string) {
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				t.Error(err)
			}
		}
		go func() {
			send(`{"jsonrpc":"2.0","id":0,"method":"x/echo","params":{"early":true}}`)
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
		}()
		msg, err := c.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(t.Context(), &jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		go func() {
			send(`{"jsonrpc":"2.0","id":2,"method":"x/echo","params":{"a":1}}`)
			send(`{"jsonrpc":"2.0","id":3,"method":"x/block"}`)
			send(`{"jsonrpc":"2.0","id":4,"method":"x/panic"}`)
		}()
		synctest.Wait()
		go send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
		go func() {
			synctest.Wait()
			inW.Close()
		}()
		for {
			if _, err := c.Read(t.Context()); err != nil {
				break // the cancelled notification, then EOF
			}
		}
		got := out.lines()
		for _, want := range []string{
			`{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"invalid request: \"x/echo\" before initialization"}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"a":1}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":0,"message":"Request cancelled"}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"internal error"}}`,
		} {
			if !slices.Contains(got, want) {
				t.Errorf("output lacks %s:\n%v", want, got)
			}
		}
		if err := c.Notify("notifications/x", map[string]int{"n": 1}); err != nil {
			t.Errorf("Notify after the input ended: %v", err)
		}
	})
}
