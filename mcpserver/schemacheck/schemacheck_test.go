package schemacheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/mcpserver/schemacheck"
)

// findShared walks up from the working directory looking for
// shared/spec/mcp-2025-11-25.schema.json (CI keeps shared/ beside the clone).
func findShared(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "spec", "mcp-2025-11-25.schema.json")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func TestEmbeddedSchemaIsTheSharedSpec(t *testing.T) {
	p := findShared(t)
	if p == "" {
		// The workplace CI keeps shared/ beside the clone; a GitHub checkout has
		// only the repository, so there the comparison cannot run.
		if os.Getenv("CI") == "true" && os.Getenv("GITHUB_ACTIONS") != "true" {
			t.Fatal("shared/spec/mcp-2025-11-25.schema.json not found above the module; CI must provide it")
		}
		t.Skip("shared/spec/mcp-2025-11-25.schema.json not found above the module (not CI): cannot compare the embedded copy")
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(schemacheck.SchemaJSON, want) {
		t.Errorf("embedded schema differs from %s; copy it again", p)
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
		{"error with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, "", true},
		{"cancellation error", `{"jsonrpc":"2.0","id":5,"error":{"code":0,"message":"Request cancelled"}}`, "tools/call", true},
		{"error with string code", `{"jsonrpc":"2.0","id":4,"error":{"code":"x","message":"m"}}`, "", false},
		{"error with fractional id", `{"jsonrpc":"2.0","id":1.5,"error":{"code":1,"message":"m"}}`, "", false},
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
