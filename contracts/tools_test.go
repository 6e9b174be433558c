package contracts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// checkGolden compares got with testdata/name byte for byte, or rewrites the
// file when -update is set.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("write golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (regenerate with go test -run Golden -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s drifted (-want +got):\n%s\nIf the change is intended, run: go test -run Golden -update",
			path, cmp.Diff(string(want), string(got)))
	}
}

// TestGoldenSchemas pins the exact bytes of the six input schemas, one line
// per tool, in the fixed order.
func TestGoldenSchemas(t *testing.T) {
	var b strings.Builder
	b.WriteString("{\n")
	for i, name := range contracts.Names() {
		schema, ok := contracts.InputSchema(name)
		if !ok {
			t.Fatalf("InputSchema(%q) not found", name)
		}
		b.WriteString("  \"" + name + "\": " + string(schema))
		if i < len(contracts.Names())-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	if !json.Valid([]byte(b.String())) {
		t.Fatalf("golden text is not JSON:\n%s", b.String())
	}
	checkGolden(t, "schemas.golden.json", []byte(b.String()))
}

// TestGoldenTools pins the whole tools/list entry of each tool, descriptions
// included.
func TestGoldenTools(t *testing.T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(contracts.Tools()); err != nil {
		t.Fatalf("encode tools: %v", err)
	}
	checkGolden(t, "tools.golden.json", buf.Bytes())
}

func TestNames(t *testing.T) {
	want := []string{"sessions_list", "session_get", "prompt_send", "prompt_cancel", "tools_list", "tool_call"}
	if diff := cmp.Diff(want, contracts.Names()); diff != "" {
		t.Errorf("Names() mismatch (-want +got):\n%s", diff)
	}
	names := contracts.Names()
	names[0] = "changed"
	if got := contracts.Names()[0]; got != contracts.SessionsList {
		t.Errorf("Names()[0] after changing an earlier result = %q, want %q", got, contracts.SessionsList)
	}
}

// TestToolsExactSchemas checks each schema against docs/contract.md section 4 as
// JSON values, independent of the golden file.
func TestToolsExactSchemas(t *testing.T) {
	const nb = `{"type":"string","minLength":1,"pattern":"\\S"}`
	const empty = `{"type":"object","properties":{},"additionalProperties":false}`
	want := map[string]string{
		contracts.SessionsList: empty,
		contracts.SessionGet:   `{"type":"object","properties":{"session_id":` + nb + `},"required":["session_id"],"additionalProperties":false}`,
		contracts.PromptSend: `{"type":"object","properties":{"prompt":` + nb + `,"session_id":` + nb + `},` +
			`"required":["prompt"],"additionalProperties":false}`,
		contracts.PromptCancel: `{"type":"object","properties":{"session_id":` + nb + `},"required":["session_id"],"additionalProperties":false}`,
		contracts.ToolsList:    empty,
		contracts.ToolCall: `{"type":"object","properties":{"name":` + nb + `,"arguments":{"type":"object"}},` +
			`"required":["name"],"additionalProperties":false}`,
	}
	tools := contracts.Tools()
	if len(tools) != 6 {
		t.Fatalf("len(Tools()) = %d, want 6", len(tools))
	}
	for i, tool := range tools {
		if tool.Name != contracts.Names()[i] {
			t.Errorf("Tools()[%d].Name = %q, want %q", i, tool.Name, contracts.Names()[i])
		}
		if tool.Description == "" {
			t.Errorf("Tools()[%d] (%s) has no description", i, tool.Name)
		}
		raw, ok := tool.InputSchema.(json.RawMessage)
		if !ok {
			t.Fatalf("Tools()[%d].InputSchema is %T, want json.RawMessage", i, tool.InputSchema)
		}
		if diff := cmp.Diff(decode(t, want[tool.Name]), decode(t, string(raw))); diff != "" {
			t.Errorf("schema of %s mismatch (-want +got):\n%s", tool.Name, diff)
		}
		fromInputSchema, _ := contracts.InputSchema(tool.Name)
		if !bytes.Equal(raw, fromInputSchema) {
			t.Errorf("Tools() and InputSchema(%q) disagree:\n%s\n%s", tool.Name, raw, fromInputSchema)
		}
		for _, noise := range []string{"$schema", "$id", "$defs", "$ref"} {
			if bytes.Contains(raw, []byte(noise)) {
				t.Errorf("schema of %s contains %q: %s", tool.Name, noise, raw)
			}
		}
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// TestToolsImmutable changes everything a caller can reach and checks that
// later calls are unaffected.
func TestToolsImmutable(t *testing.T) {
	before, err := json.Marshal(contracts.Tools())
	if err != nil {
		t.Fatal(err)
	}
	tools := contracts.Tools()
	for _, tool := range tools {
		raw := tool.InputSchema.(json.RawMessage)
		for i := range raw {
			raw[i] = 'x'
		}
		tool.Name = "changed"
		tool.Description = "changed"
	}
	tools[0] = &mcp.Tool{Name: "replaced"}
	schema, _ := contracts.InputSchema(contracts.SessionGet)
	for i := range schema {
		schema[i] = 'x'
	}
	after, err := json.Marshal(contracts.Tools())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("Tools() changed after callers modified earlier results:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := contracts.Validate(contracts.SessionGet, []byte(`{"session_id":"s"}`)); err != nil {
		t.Errorf("Validate after callers modified a schema copy: %v", err)
	}
}

func TestInputSchemaUnknown(t *testing.T) {
	for _, name := range []string{"", "sessions-list", "SESSIONS_LIST", "read"} {
		if got, ok := contracts.InputSchema(name); ok || got != nil {
			t.Errorf("InputSchema(%q) = %s, %t; want nil, false", name, got, ok)
		}
	}
}

// go-sdk accepts the tools as they are (it panics on a schema whose type is
// not "object").
func TestToolsAcceptedByGoSDK(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "openprogram", Version: "test"}, nil)
	for _, tool := range contracts.Tools() {
		srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	}
}

// TestToolTitlesAndAnnotations pins docs/contract.md section 4's hint table. The
// spec's defaults are destructiveHint and openWorldHint true, so both must be
// present (not omitted) on every tool.
func TestToolTitlesAndAnnotations(t *testing.T) {
	type hints struct{ ReadOnly, Destructive, Idempotent, OpenWorld bool }
	want := map[string]hints{
		contracts.SessionsList: {ReadOnly: true, Idempotent: true},
		contracts.SessionGet:   {ReadOnly: true, Idempotent: true},
		contracts.ToolsList:    {ReadOnly: true, Idempotent: true},
		contracts.PromptSend:   {OpenWorld: true},
		contracts.PromptCancel: {Idempotent: true},
		contracts.ToolCall:     {},
	}
	titles := map[string]bool{}
	for _, tool := range contracts.Tools() {
		if tool.Title == "" || titles[tool.Title] {
			t.Errorf("%s: title %q, want a distinct non-empty title", tool.Name, tool.Title)
		}
		titles[tool.Title] = true
		a := tool.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations %+v, want all four hints set explicitly", tool.Name, a)
			continue
		}
		got := hints{ReadOnly: a.ReadOnlyHint, Destructive: *a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: *a.OpenWorldHint}
		if got != want[tool.Name] {
			t.Errorf("%s: hints %+v, want %+v", tool.Name, got, want[tool.Name])
		}
		if a.Title != tool.Title {
			t.Errorf("%s: annotations.title %q, want the title %q (2025-03-26 clients read only that one)", tool.Name, a.Title, tool.Title)
		}
	}
}

// Only prompt_send may run as an MCP task ("optional"); the other five
// answer at once and carry no execution member.
func TestExecution(t *testing.T) {
	for _, name := range contracts.Names() {
		ex := contracts.Execution(name)
		if name == contracts.PromptSend {
			if ex == nil || ex.TaskSupport != contracts.TaskSupportOptional {
				t.Errorf("Execution(%q) = %+v, want taskSupport optional", name, ex)
			}
			continue
		}
		if ex != nil {
			t.Errorf("Execution(%q) = %+v, want nil (forbidden)", name, ex)
		}
	}
	if contracts.Execution("nope") != nil {
		t.Error("Execution of an unknown tool is not nil")
	}
	contracts.Execution(contracts.PromptSend).TaskSupport = "required"
	if got := contracts.Execution(contracts.PromptSend).TaskSupport; got != contracts.TaskSupportOptional {
		t.Errorf("Execution returned shared state: %q after a caller changed its copy", got)
	}
}
