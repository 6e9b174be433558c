package schemacheck_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/mcpserver/schemacheck"
)

// schemaSHA256 pins the embedded copy of the official schema
// (schema/2025-11-25/schema.json in modelcontextprotocol/modelcontextprotocol).
// Replacing the file means updating this hash in the same commit.
const schemaSHA256 = "268a5f82ba70fd7e4b6dc4aa1e64f116f74b4d0edcb69dc046829c79dd4e97e7"

func TestEmbeddedSchemaIsPinned(t *testing.T) {
	sum := sha256.Sum256(schemacheck.SchemaJSON)
	if got := hex.EncodeToString(sum[:]); got != schemaSHA256 {
		t.Errorf("embedded schema has SHA-256 %s, want %s: the copy changed; restore it or pin the new hash deliberately", got, schemaSHA256)
	}
}

// TestEmbeddedSchemaIsUpstream compares the embedded copy with an upstream
// schema.json named by OPENPROGRAM_MCP_SCHEMA_FILE, when it is set; a file
// that cannot be read then fails the test.
func TestEmbeddedSchemaIsUpstream(t *testing.T) {
	p := os.Getenv("OPENPROGRAM_MCP_SCHEMA_FILE")
	if p == "" {
		t.Skip("OPENPROGRAM_MCP_SCHEMA_FILE is not set: no upstream schema.json to compare with (the SHA-256 pin still holds the copy)")
	}
	want, err := os.ReadFile(p) // the variable asks for the comparison: a missing file fails
	if err != nil {
		t.Fatalf("OPENPROGRAM_MCP_SCHEMA_FILE: %v", err)
	}
	if !bytes.Equal(schemacheck.SchemaJSON, want) {
		t.Errorf("embedded schema differs from %s; copy it again and update schemaSHA256", p)
	}
}

func TestServerFrame(t *testing.T) {
	v, err := schemacheck.New()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		frame  string
		method string
		ok     bool
	}{
		{"initialize result", `{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{}},"protocolVersion":"2025-11-25","serverInfo":{"name":"openprogram","version":"1"}}}`, "initialize", true},
		{"initialize result without serverInfo", `{"jsonrpc":"2.0","id":1,"result":{"capabilities":{},"protocolVersion":"2025-11-25"}}`, "initialize", false},
		{"tools/list result", `{"jsonrpc":"2.0","id":"a","result":{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}}`, "tools/list", true},
		{"tools/list tool without schema", `{"jsonrpc":"2.0","id":"a","result":{"tools":[{"name":"x"}]}}`, "tools/list", false},
		{"text result", `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`, "tools/call", true},
		{"image result", `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"isError":false}}`, "tools/call", true},
		{"image without mimeType", `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"image","data":"aGk="}]}}`, "tools/call", false},
		{"call result without content", `{"jsonrpc":"2.0","id":2,"result":{"isError":true}}`, "tools/call", false},
		{"ping result", `{"jsonrpc":"2.0","id":3,"result":{}}`, "ping", true},
		{"result of unknown request", `{"jsonrpc":"2.0","id":3,"result":{}}`, "", true},
		{"result response without id", `{"jsonrpc":"2.0","result":{}}`, "", false},
		{"error with id", `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"method not found"}}`, "tools/call", true},
		{"error with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, "", false},
		{"error without id", `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}`, "", true},
		{"cancellation error", `{"jsonrpc":"2.0","id":5,"error":{"code":0,"message":"Request cancelled"}}`, "tools/call", true},
		{"error with string code", `{"jsonrpc":"2.0","id":4,"error":{"code":"x","message":"m"}}`, "", false},
		{"error with fractional id", `{"jsonrpc":"2.0","id":1.5,"error":{"code":1,"message":"m"}}`, "", false},
		// Numbers are exact: 1.0 and a 20-digit id are integers, 1.5 is not.
		{"error with id 1.0", `{"jsonrpc":"2.0","id":1.0,"error":{"code":1,"message":"m"}}`, "", true},
		{"error with a 20-digit id", `{"jsonrpc":"2.0","id":12345678901234567890,"error":{"code":1,"message":"m"}}`, "", true},
		{"progress as a string", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":"1"}}`, "", false},
		{"tool with a string inputSchema", `{"jsonrpc":"2.0","id":"a","result":{"tools":[{"name":"x","inputSchema":"{}"}]}}`, "tools/list", false},
		{"result and error", `{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":1,"message":"m"}}`, "", false},
		{"wrong version", `{"jsonrpc":"1.0","id":4,"result":{}}`, "", false},
		{"progress", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"turn started"}}`, "", true},
		{"progress without progress", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t"}}`, "", false},
		{"unknown notification", `{"jsonrpc":"2.0","method":"x/y"}`, "", true},
		{"two lines", "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"result\":{}}", "", false},
		{"not an object", `[1]`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.ServerFrame([]byte(tt.frame), tt.method)
			if (err == nil) != tt.ok {
				t.Errorf("ServerFrame(%s, %q) = %v, want ok=%v", tt.frame, tt.method, err, tt.ok)
			}
		})
	}
}

func TestResultDef(t *testing.T) {
	v, err := schemacheck.New()
	if err != nil {
		t.Fatal(err)
	}
	for method, want := range map[string]string{
		"initialize": "InitializeResult",
		"tools/list": "ListToolsResult",
		"tools/call": "CallToolResult",
		"ping":       "EmptyResult",
	} {
		if got, ok := v.ResultDef(method); !ok || got != want {
			t.Errorf("ResultDef(%q) = %q, %v, want %q", method, got, ok, want)
		}
	}
	if err := v.Def("NoSuchThing", []byte(`{}`)); err == nil {
		t.Error("Def(NoSuchThing) succeeded")
	}
}

func TestParseRejectsNonSchemas(t *testing.T) {
	for _, in := range []string{`not json`, `{}`, `{"$defs":{"A":{}}}`} {
		if _, err := schemacheck.Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%s) succeeded", in)
		}
	}
}

// cannedTransport is a client transport whose peer answers every call with
// the next canned frame.
type cannedTransport struct{ frames []string }

func (c *cannedTransport) Connect(context.Context) (mcp.Connection, error) {
	return &cannedConn{frames: c.frames}, nil
}

type cannedConn struct {
	frames  []string
	pending []jsonrpc.ID
}

func (c *cannedConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.frames) == 0 {
		return nil, io.EOF
	}
	f := c.frames[0]
	c.frames = c.frames[1:]
	msg, err := jsonrpc.DecodeMessage([]byte(f))
	if err != nil {
		return nil, err
	}
	if r, ok := msg.(*jsonrpc.Response); ok && len(c.pending) > 0 {
		r.ID = c.pending[0]
		c.pending = c.pending[1:]
	}
	return msg, nil
}

func (c *cannedConn) Write(_ context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
		c.pending = append(c.pending, r.ID)
	}
	return nil
}
func (c *cannedConn) Close() error      { return nil }
func (c *cannedConn) SessionID() string { return "" }

func TestWrapChecksWhatTheClientReads(t *testing.T) {
	v, err := schemacheck.New()
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	tr := schemacheck.Wrap(&cannedTransport{frames: []string{
		// An initialize result missing serverInfo, then a progress
		// notification without progress.
		`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{},"protocolVersion":"2025-11-25"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`,
	}}, v, func(err error) { errs = append(errs, err) })
	conn, err := tr.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	call := &jsonrpc.Request{ID: mustID(t, "1"), Method: "initialize", Params: json.RawMessage(`{}`)}
	if err := conn.Write(t.Context(), call); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := conn.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Read(t.Context()); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the last frame = %v, want EOF", err)
	}
	if len(errs) != 2 {
		t.Fatalf("reported %d errors, want 2: %v", len(errs), errs)
	}
	if !strings.Contains(errs[0].Error(), "InitializeResult") {
		t.Errorf("first error %q does not name InitializeResult", errs[0])
	}
	if !strings.Contains(errs[1].Error(), "ProgressNotification") {
		t.Errorf("second error %q does not name ProgressNotification", errs[1])
	}
}

func mustID(t *testing.T, s string) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
