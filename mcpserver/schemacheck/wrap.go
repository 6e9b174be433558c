package schemacheck

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Wrap returns a client-side transport that checks, with v, every message
// the client reads from the server, and reports each failure to report. It
// remembers the method of every request the client writes, so a response is
// checked against the result type of the request it answers.
//
// Messages are checked in the form go-sdk decoded them, re-encoded with
// jsonrpc.EncodeMessage; results, params and error data are carried as raw
// JSON, so they are checked byte for byte.
func Wrap(t mcp.Transport, v *Validator, report func(error)) mcp.Transport {
	return &transport{inner: t, v: v, report: report}
}

type transport struct {
	inner  mcp.Transport
	v      *Validator
	report func(error)
}

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Connection: c, v: t.v, report: t.report, methods: map[jsonrpc.ID]string{}}, nil
}

type conn struct {
	mcp.Connection
	v      *Validator
	report func(error)

	mu      sync.Mutex
	methods map[jsonrpc.ID]string
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	data, encErr := jsonrpc.EncodeMessage(msg)
	if encErr != nil {
		c.report(fmt.Errorf("re-encode server message: %w", encErr))
		return msg, nil
	}
	var method string
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		method = c.methods[resp.ID]
		delete(c.methods, resp.ID)
		c.mu.Unlock()
	}
	if verr := c.v.ServerFrame(data, method); verr != nil {
		c.report(verr)
	}
	return msg, nil
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		c.methods[req.ID] = req.Method
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}
