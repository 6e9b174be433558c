package mcpserver

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKStdioFaults pins what go-sdk v1.8.0 does on its own stdio
// transport (mcp.IOTransport, the same ioConn as mcp.StdioTransport) for
// the cases internal/stdio and the middleware handle. When an SDK upgrade
// changes one of these, this test fails: re-check whether the workaround is
// still needed.
func TestGoSDKStdioFaults(t *testing.T) {
	const ini = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	const initResult = `{"jsonrpc":"2.0","id":0,"result":{"capabilities":{"logging":{},"tools":{"listChanged":true}},"protocolVersion":"2025-11-25","serverInfo":{"name":"p","version":"1"}}}`
	tests := []struct {
		name    string
		lines   []string
		want    []string
		wantErr bool // Run returns an error: the session ended
	}{{
		name:  "a request before initialize is refused with code 0",
		lines: []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		want:  []string{`{"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"method \"tools/list\" is invalid during session initialization"}}`},
	}, {
		name:    "a line that is not JSON ends the session unanswered",
		lines:   []string{ini, `not json`, `{"jsonrpc":"2.0","id":3,"method":"ping"}`},
		want:    []string{initResult},
		wantErr: true,
	}, {
		name:    "a batch ends a 2025-11-25 session unanswered",
		lines:   []string{ini, `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, `{"jsonrpc":"2.0","id":3,"method":"ping"}`},
		want:    []string{initResult},
		wantErr: true,
	}, {
		name:  "a cancelled request is answered with its handler's result",
		lines: []string{ini, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"zeta","arguments":{"block":true}}}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`},
		want:  []string{initResult, `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"result after cancel"}]}}`},
	}, {
		name:  "the message of a -32601 handler error is replaced",
		lines: []string{ini, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"zeta","arguments":{"notfound":true}}}`},
		want:  []string{initResult, `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"method not found: \"tools/call\""}}`},
	}, {
		name:  "an unknown tool is -32602, tools/list is sorted by name and carries cache fields",
		lines: []string{ini, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`},
		want: []string{initResult, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool \"nope\""}}`,
			`{"jsonrpc":"2.0","id":8,"result":{"ttlMs":0,"cacheScope":"public","tools":[{"inputSchema":{"type":"object"},"name":"alpha"},{"inputSchema":{"type":"object"},"name":"zeta"}]}}`},
	}, {
		name:  "a second initialize is refused with code 0; unadvertised resources/list is answered",
		lines: []string{ini, strings.Replace(ini, `"id":0`, `"id":9`, 1), `{"jsonrpc":"2.0","id":10,"method":"resources/list"}`},
		want: []string{initResult, `{"jsonrpc":"2.0","id":9,"error":{"code":0,"message":"duplicate \"initialize\" received"}}`,
			`{"jsonrpc":"2.0","id":10,"result":{"ttlMs":0,"cacheScope":"public","resources":[]}}`},
	}, {
		name:  "a null id makes a notification; a fractional id is truncated",
		lines: []string{ini, `{"jsonrpc":"2.0","id":null,"method":"ping"}`, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`},
		want:  []string{initResult, `{"jsonrpc":"2.0","id":1,"result":{}}`},
	}, {
		name:  "EOF cancels running requests at once and drops their responses",
		lines: []string{ini, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"zeta","arguments":{"slow":true}}}`},
		want:  []string{initResult},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got, err := runPlainSDK(t, tt.lines)
				if (err != nil) != tt.wantErr {
					t.Errorf("Run error = %v, want error %v", err, tt.wantErr)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("frames (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// runPlainSDK serves lines with a bare go-sdk server on mcp.IOTransport and
// returns what it wrote and what Run returned.
func runPlainSDK(t *testing.T, lines []string) ([]string, error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "zeta", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		switch string(r.Params.Arguments) {
		case `{"block":true}`:
			<-ctx.Done()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "result after cancel"}}}, nil
		case `{"notfound":true}`:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "my own message"}
		case `{"slow":true}`:
			// EOF cancels every handler; whatever it returns then is dropped.
			<-ctx.Done()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
		}
		return &mcp.CallToolResult{}, nil
	})
	s.AddTool(&mcp.Tool{Name: "alpha", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- s.Run(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW})
		outW.Close()
	}()
	var got []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			got = append(got, sc.Text())
		}
	}()
	for _, l := range lines {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			break // the session ended
		}
		synctest.Wait()
	}
	inW.Close()
	err := <-done
	<-read
	return got, err
}
