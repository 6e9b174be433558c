package clients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/tailscale/hujson"
)

// Merging our entry into a client's configuration file, and taking it out,
// keeping everything else: other servers, unknown keys, comments (JSONC and
// TOML), layout. Each function returns the new file content; equal input and
// output mean nothing to do.

// maxFileBytes bounds a client configuration file we read.
const maxFileBytes = 4 << 20

// jsonIndentUnit guesses the indentation of a JSON document from its first
// member; two spaces when there is none.
func jsonIndentUnit(root *hujson.Object) string {
	if len(root.Members) > 0 {
		extra := string(root.Members[0].Name.BeforeExtra)
		if i := strings.LastIndexByte(extra, '\n'); i >= 0 {
			if ws := extra[i+1:]; ws != "" && strings.Trim(ws, " \t") == "" {
				return ws
			}
		}
	}
	return "  "
}

func parseJSONObject(data []byte) (hujson.Value, *hujson.Object, error) {
	v, err := hujson.Parse(data)
	if err != nil {
		return hujson.Value{}, nil, fmt.Errorf("not valid JSON or JSONC: %w", err)
	}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return hujson.Value{}, nil, errors.New("the top level is not a JSON object")
	}
	return v, obj, nil
}

// memberIndex returns the index of the member called name, or -1.
func memberIndex(obj *hujson.Object, name string) int {
	for i, m := range obj.Members {
		lit, ok := m.Name.Value.(hujson.Literal)
		if ok && lit.String() == name {
			return i
		}
	}
	return -1
}

// formattedValue parses v encoded at depth (indent = unit × depth).
func formattedValue(v any, unit string, depth int) (hujson.Value, error) {
	text, err := encodeJSON(v, strings.Repeat(unit, depth), unit)
	if err != nil {
		return hujson.Value{}, err
	}
	hv, err := hujson.Parse(text)
	if err != nil {
		return hujson.Value{}, fmt.Errorf("parse encoded client config: %w", err)
	}
	hv.BeforeExtra = hujson.Extra(" ")
	return hv, nil
}

// lineBefore makes extra (the comments and space before an item) end with a
// newline and the item's indentation.
func lineBefore(extra hujson.Extra, indent string) hujson.Extra {
	s := strings.TrimRight(string(extra), " \t")
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return hujson.Extra(s + indent)
}

// setMember sets obj[name] = val: in place when present (keeping the
// comments around it), else as a new last member on its own line.
func setMember(obj *hujson.Object, name string, val hujson.Value, unit string, depth int) {
	if i := memberIndex(obj, name); i >= 0 {
		val.BeforeExtra = obj.Members[i].Value.BeforeExtra
		val.AfterExtra = obj.Members[i].Value.AfterExtra
		obj.Members[i].Value = val
		return
	}
	m := hujson.ObjectMember{Name: hujson.Value{Value: hujson.String(name)}, Value: val}
	var lastAfter *hujson.Extra
	if n := len(obj.Members); n > 0 {
		lastAfter = &obj.Members[n-1].Value.AfterExtra
	}
	m.Name.BeforeExtra = appendItem(&obj.AfterExtra, lastAfter, &m.Value.AfterExtra, unit, depth)
	obj.Members = append(obj.Members, m)
}

// appendItem prepares the extras for an item appended to a container at
// depth: what stood between the old last item (or the opening bracket) and
// the closing one moves before the new item, which gets its own line, the
// closing bracket goes on a line of its own, and a trailing comma stays a
// trailing comma. It returns the new item's leading extra.
func appendItem(containerAfter, lastAfter, newAfter *hujson.Extra, unit string, depth int) hujson.Extra {
	before := lineBefore(*containerAfter, strings.Repeat(unit, depth))
	*containerAfter = hujson.Extra("\n" + strings.Repeat(unit, depth-1))
	if lastAfter != nil && *lastAfter != nil {
		*newAfter = hujson.Extra{} // the old last item had a trailing comma
	}
	return before
}

// removeItem prepares the extras for deleting item i of n: comments on the
// lines before it are kept (moved to what follows), and the trailing comma
// of a removed last item passes to the new last one.
func removeItem(i, n int, itemBefore, itemAfter hujson.Extra, nextBefore, containerAfter, prevAfter *hujson.Extra) {
	keep := strings.TrimRight(string(itemBefore), " \t")
	hasComment := strings.TrimSpace(keep) != ""
	if i == n-1 {
		if prevAfter != nil {
			*prevAfter = itemAfter
		}
		if hasComment {
			*containerAfter = hujson.Extra(keep + strings.TrimLeft(string(*containerAfter), "\n"))
		}
		return
	}
	if hasComment {
		*nextBefore = hujson.Extra(keep + strings.TrimLeft(string(*nextBefore), "\n"))
	}
}

// removeMember deletes obj[name] and reports whether it was there.
func removeMember(obj *hujson.Object, name string) bool {
	i := memberIndex(obj, name)
	if i < 0 {
		return false
	}
	n := len(obj.Members)
	var next, prev *hujson.Extra
	if i+1 < n {
		next = &obj.Members[i+1].Name.BeforeExtra
	}
	if i > 0 {
		prev = &obj.Members[i-1].Value.AfterExtra
	}
	removeItem(i, n, obj.Members[i].Name.BeforeExtra, obj.Members[i].Value.AfterExtra, next, &obj.AfterExtra, prev)
	obj.Members = slices.Delete(obj.Members, i, i+1)
	return true
}

// removeElement deletes arr[j].
func removeElement(arr *hujson.Array, j int) {
	n := len(arr.Elements)
	var next, prev *hujson.Extra
	if j+1 < n {
		next = &arr.Elements[j+1].BeforeExtra
	}
	if j > 0 {
		prev = &arr.Elements[j-1].AfterExtra
	}
	removeItem(j, n, arr.Elements[j].BeforeExtra, arr.Elements[j].AfterExtra, next, &arr.AfterExtra, prev)
	arr.Elements = slices.Delete(arr.Elements, j, j+1)
}

// upsertJSON puts entry at top.openprogram in data (JSON or JSONC), and for
// each of inputs (objects with an "id") replaces the element of the
// top-level "inputs" list with that id or appends it.
func upsertJSON(data []byte, top string, entry any, inputs []vscodeInput) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		out, err := encodeJSON(jsonDoc(top, entry, inputs), "", "  ")
		if err != nil {
			return nil, err
		}
		return append(out, '\n'), nil
	}
	v, root, err := parseJSONObject(data)
	if err != nil {
		return nil, err
	}
	unit := jsonIndentUnit(root)
	if i := memberIndex(root, top); i < 0 {
		val, err := formattedValue(map[string]any{mcpServerName: entry}, unit, 1)
		if err != nil {
			return nil, err
		}
		setMember(root, top, val, unit, 1)
	} else {
		servers, ok := root.Members[i].Value.Value.(*hujson.Object)
		if !ok {
			return nil, fmt.Errorf("%q is not a JSON object", top)
		}
		val, err := formattedValue(entry, unit, 2)
		if err != nil {
			return nil, err
		}
		setMember(servers, mcpServerName, val, unit, 2)
	}
	if len(inputs) > 0 {
		if err := upsertInputs(root, inputs, unit); err != nil {
			return nil, err
		}
	}
	out := v.Pack()
	if err := checkJSONEntry(out, top, entry); err != nil {
		return nil, err
	}
	return out, nil
}

func upsertInputs(root *hujson.Object, inputs []vscodeInput, unit string) error {
	i := memberIndex(root, "inputs")
	if i < 0 {
		val, err := formattedValue(inputs, unit, 1)
		if err != nil {
			return err
		}
		setMember(root, "inputs", val, unit, 1)
		return nil
	}
	arr, ok := root.Members[i].Value.Value.(*hujson.Array)
	if !ok {
		return errors.New(`"inputs" is not a JSON list`)
	}
	for _, in := range inputs {
		id := in.ID
		val, err := formattedValue(in, unit, 2)
		if err != nil {
			return err
		}
		if j := inputIndex(arr, id); j >= 0 {
			val.BeforeExtra = arr.Elements[j].BeforeExtra
			val.AfterExtra = arr.Elements[j].AfterExtra
			arr.Elements[j] = val
			continue
		}
		var lastAfter *hujson.Extra
		if n := len(arr.Elements); n > 0 {
			lastAfter = &arr.Elements[n-1].AfterExtra
		}
		val.BeforeExtra = appendItem(&arr.AfterExtra, lastAfter, &val.AfterExtra, unit, 2)
		arr.Elements = append(arr.Elements, val)
	}
	return nil
}

// inputIndex returns the index of the element of arr whose "id" is id, or -1.
func inputIndex(arr *hujson.Array, id string) int {
	for j, e := range arr.Elements {
		obj, ok := e.Value.(*hujson.Object)
		if !ok {
			continue
		}
		if k := memberIndex(obj, "id"); k >= 0 {
			if lit, ok := obj.Members[k].Value.Value.(hujson.Literal); ok && lit.Kind() == '"' && lit.String() == id {
				return j
			}
		}
	}
	return -1
}

// jsonDoc is a whole configuration that holds only our entry (and inputs).
func jsonDoc(top string, entry any, inputs []vscodeInput) any {
	if len(inputs) == 0 {
		return map[string]any{top: map[string]any{mcpServerName: entry}}
	}
	return struct {
		Inputs  []vscodeInput  `json:"inputs"`
		Servers map[string]any `json:"servers"`
	}{inputs, map[string]any{mcpServerName: entry}}
}

// removeJSON takes top.openprogram, and the inputs with the given ids, out
// of data. Input ids are removed only when they were ours (inputIDs), so a
// user's own inputs stay.
func removeJSON(data []byte, top string, inputIDs []string) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return data, nil
	}
	v, root, err := parseJSONObject(data)
	if err != nil {
		return nil, err
	}
	i := memberIndex(root, top)
	if i < 0 {
		return data, nil
	}
	servers, ok := root.Members[i].Value.Value.(*hujson.Object)
	if !ok || !removeMember(servers, mcpServerName) {
		return data, nil
	}
	if k := memberIndex(root, "inputs"); k >= 0 {
		if arr, ok := root.Members[k].Value.Value.(*hujson.Array); ok {
			for _, id := range inputIDs {
				if j := inputIndex(arr, id); j >= 0 {
					removeElement(arr, j)
				}
			}
		}
	}
	return v.Pack(), nil
}

// checkJSONEntry parses out as a client would and checks that it holds
// entry under top: the last guard before anything is written.
func checkJSONEntry(out []byte, top string, entry any) error {
	std, err := hujson.Standardize(bytes.Clone(out))
	if err != nil {
		return fmt.Errorf("the merged file does not parse (%w); report this and edit the file by hand", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(std, &doc); err != nil {
		return fmt.Errorf("the merged file does not parse (%w); report this and edit the file by hand", err)
	}
	var want any
	raw, _ := json.Marshal(entry)
	_ = json.Unmarshal(raw, &want)
	servers, _ := doc[top].(map[string]any)
	if !reflect.DeepEqual(want, servers[mcpServerName]) {
		return errors.New("the merged file does not hold the new entry; report this and edit the file by hand")
	}
	return nil
}

// ourTOMLPath is the key path of our table in Codex's config.toml.
var ourTOMLPath = []string{"mcp_servers", mcpServerName}

// tomlSpan is a byte range of a TOML document.
type tomlSpan struct{ start, end int }

// ourTOMLSpans returns the byte ranges of our tables in data: each runs from
// its header line to the end of its last key/value line (comments and blank
// lines after it belong to what follows). Our entry written any other way
// (dotted keys, an inline table) is an error: it cannot be edited safely.
func ourTOMLSpans(data []byte) ([]tomlSpan, error) {
	p := unstable.Parser{}
	p.Reset(data)
	type header struct {
		path []string
		ours bool
	}
	var headers []header
	var kvEnds []int         // end offset of the last key/value of each header (index+1; 0 = root)
	var protected []tomlSpan // key/value byte ranges: a '[' inside them is no header
	kvEnds = append(kvEnds, 0)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = tomlKey(e.Key())
			headers = append(headers, header{path: table, ours: hasPrefix(table, ourTOMLPath)})
			kvEnds = append(kvEnds, -1)
		case unstable.KeyValue:
			full := append(slices.Clone(table), tomlKey(e.Key())...)
			inOurs := len(headers) > 0 && headers[len(headers)-1].ours
			if !inOurs && (hasPrefix(full, ourTOMLPath) || (hasPrefix(ourTOMLPath, full) && e.Value().Kind == unstable.InlineTable)) {
				return nil, fmt.Errorf("mcp_servers.%s is written with dotted keys or an inline table; rewrite it as a [mcp_servers.%s] table or remove it, then run again", mcpServerName, mcpServerName)
			}
			r := e.Raw
			protected = append(protected, tomlSpan{int(r.Offset), int(r.Offset + r.Length)})
			kvEnds[len(kvEnds)-1] = int(r.Offset + r.Length)
		}
	}
	if err := p.Error(); err != nil {
		var perr *unstable.ParserError
		if errors.As(err, &perr) {
			return nil, fmt.Errorf("not valid TOML at line %d: %s", p.Shape(p.Range(perr.Highlight)).Start.Line, perr.Message)
		}
		return nil, fmt.Errorf("not valid TOML: %w", err)
	}
	starts := tomlHeaderLines(data, protected)
	if len(starts) != len(headers) {
		return nil, errors.New("could not locate the table headers; edit the file by hand")
	}
	var spans []tomlSpan
	for i, h := range headers {
		if !h.ours {
			continue
		}
		end := kvEnds[i+1]
		if end < 0 { // a header with no keys: up to the end of its line
			end = starts[i] + lineLen(data[starts[i]:])
		} else if end < len(data) && data[end] == '\n' {
			end++
		} else {
			end += lineLen(data[end:])
		}
		spans = append(spans, tomlSpan{starts[i], end})
	}
	return spans, nil
}

// lineLen is the length of the first line of b, its newline included.
func lineLen(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	return len(b)
}

// tomlHeaderLines returns the offsets of the lines that start (after blanks)
// with '[' outside any key/value.
func tomlHeaderLines(data []byte, protected []tomlSpan) []int {
	var starts []int
	for off := 0; off < len(data); off += lineLen(data[off:]) {
		line := data[off : off+lineLen(data[off:])]
		trimmed := bytes.TrimLeft(line, " \t")
		if len(trimmed) == 0 || trimmed[0] != '[' {
			continue
		}
		at := off + len(line) - len(trimmed)
		inside := false
		for _, p := range protected {
			if at >= p.start && at < p.end {
				inside = true
				break
			}
		}
		if !inside {
			starts = append(starts, off)
		}
	}
	return starts
}

func tomlKey(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// upsertTOML puts table (our whole [mcp_servers.openprogram] table) into
// data: where our table was, else at the end.
func upsertTOML(data []byte, table string) ([]byte, error) {
	spans, err := ourTOMLSpans(data)
	if err != nil {
		return nil, err
	}
	var out []byte
	if len(spans) == 0 {
		out = bytes.Clone(data)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		if len(bytes.TrimSpace(out)) > 0 {
			out = append(out, '\n')
		}
		out = append(out, table...)
	} else {
		out = append(out, data[:spans[0].start]...)
		out = append(out, table...)
		prev := spans[0].end
		for _, s := range spans[1:] {
			if gap := data[prev:s.start]; len(bytes.TrimSpace(gap)) > 0 {
				out = append(out, gap...) // comments between our tables stay
			}
			prev = s.end
		}
		out = append(out, data[prev:]...)
	}
	if err := checkTOMLEntry(out, table); err != nil {
		return nil, err
	}
	return out, nil
}

// removeTOML takes our tables out of data, with one blank line after them.
func removeTOML(data []byte) ([]byte, error) {
	spans, err := ourTOMLSpans(data)
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return data, nil
	}
	var out []byte
	prev := 0
	for _, s := range spans {
		out = append(out, data[prev:s.start]...)
		prev = s.end
		if prev < len(data) && data[prev] == '\n' {
			prev++
		}
	}
	if prev >= len(data) && bytes.HasSuffix(out, []byte("\n\n")) {
		out = out[:len(out)-1] // the blank line upsertTOML put before a table it appended
	}
	return append(out, data[prev:]...), nil
}

// checkTOMLEntry parses out as Codex would and checks that our entry is the
// one in table.
func checkTOMLEntry(out []byte, table string) error {
	var doc, want struct {
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(out, &doc); err != nil {
		return fmt.Errorf("the merged file does not parse (%w); edit the file by hand", err)
	}
	if err := toml.Unmarshal([]byte(table), &want); err != nil {
		return fmt.Errorf("encode the codex entry: %w", err)
	}
	if !reflect.DeepEqual(doc.MCPServers[mcpServerName], want.MCPServers[mcpServerName]) {
		return errors.New("the merged file does not hold the new entry (is [mcp_servers." + mcpServerName + "] extended elsewhere?); edit the file by hand")
	}
	return nil
}
