package authz

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openprogram/openprogram/internal/clip"
)

// Action is what a permission rule does with a matching call.
type Action string

// The three actions. When several rules match, deny beats ask beats allow.
const (
	ActionAllow Action = "allow"
	ActionAsk   Action = "ask"
	ActionDeny  Action = "deny"
)

// Rule is one entry of the config key tools.permission_rules:
// {"tool": "<name>" or "<name>(<pattern>)", "action": "allow" | "ask" | "deny"}.
//
// The name may be a glob (memory_*). The pattern is "prefix:*", a glob (* ? [...]) or an
// exact value, matched against the normalised command (bash, exec, shell, process), the
// resolved path (read, write, edit, list, glob, grep), every apply_patch target, or the
// call's arguments as canonical JSON for any other tool. See the package documentation
// for the details.
type Rule struct {
	Tool   string `json:"tool"`
	Action Action `json:"action"`
}

// String returns the rule as it appears in configuration, for messages.
func (r Rule) String() string {
	return fmt.Sprintf("{tool: %s, action: %s}", show(clip.String(r.Tool, msgClip)), show(clip.String(string(r.Action), msgClip)))
}

// ErrInvalidRule is wrapped by every error of [ParseRules] and [NewRules].
var ErrInvalidRule = errors.New("invalid permission rule")

// Rules are permission rules, each checked and compiled once, when the
// value is made ([ParseRules], [NewRules]); the zero value is no rules. A
// [Speaker] holds them and the gate matches them as they are: no rule is
// checked or compiled again per call.
type Rules struct {
	list     []Rule
	compiled []compiledRule
}

// NewRules checks and compiles rs. The error names the first malformed rule.
func NewRules(rs ...Rule) (Rules, error) {
	if len(rs) == 0 {
		return Rules{}, nil
	}
	out := Rules{list: make([]Rule, 0, len(rs)), compiled: make([]compiledRule, 0, len(rs))}
	for _, r := range rs {
		c, err := compileRule(r)
		if err != nil {
			return Rules{}, err
		}
		out.list = append(out.list, r)
		out.compiled = append(out.compiled, c)
	}
	return out, nil
}

// List returns the rules in order (a copy).
func (rs Rules) List() []Rule { return slices.Clone(rs.list) }

// Len returns how many rules there are.
func (rs Rules) Len() int { return len(rs.list) }

// Equal reports whether rs and o hold the same rules in the same order.
func (rs Rules) Equal(o Rules) bool { return slices.Equal(rs.list, o.list) }

// MarshalJSON writes the rules as tools.permission_rules holds them: a JSON
// array of {"tool", "action"} objects ([] for none).
func (rs Rules) MarshalJSON() ([]byte, error) {
	if rs.list == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(rs.list)
}

type patternKind int

const (
	patternNone patternKind = iota
	patternPrefix
	patternGlob
	patternExact
)

// compiledRule is a validated rule ready to match.
type compiledRule struct {
	rule    Rule
	name    string // tool name glob
	kind    patternKind
	pattern string // prefix (without ":*"), glob or exact value
}

func compileRule(r Rule) (compiledRule, error) {
	bad := func(format string, args ...any) (compiledRule, error) {
		return compiledRule{}, fmt.Errorf("%w %s: %s", ErrInvalidRule, r, fmt.Sprintf(format, args...))
	}
	switch r.Action {
	case ActionAllow, ActionAsk, ActionDeny:
	default:
		return bad("action must be %q, %q or %q", ActionAllow, ActionAsk, ActionDeny)
	}
	c := compiledRule{rule: r, name: r.Tool}
	if i := strings.IndexByte(r.Tool, '('); i >= 0 {
		if !strings.HasSuffix(r.Tool, ")") {
			return bad("tool with a pattern must look like name(pattern)")
		}
		c.name = r.Tool[:i]
		c.pattern = r.Tool[i+1 : len(r.Tool)-1]
		if c.pattern == "" {
			return bad("empty pattern in parentheses; write the bare tool name to match every call")
		}
		if strings.IndexByte(c.pattern, 0) >= 0 {
			return bad("pattern contains a NUL byte")
		}
		switch {
		case strings.HasSuffix(c.pattern, ":*"):
			c.kind = patternPrefix
			c.pattern = strings.TrimSuffix(c.pattern, ":*")
			if strings.TrimSpace(c.pattern) == "" {
				return bad("empty prefix before \":*\"; write the bare tool name to match every call")
			}
		case strings.ContainsAny(c.pattern, "*?["):
			c.kind = patternGlob
			if _, err := path.Match(c.pattern, ""); err != nil {
				return bad("bad glob %s: %v", show(clip.String(c.pattern, msgClip)), err)
			}
		default:
			c.kind = patternExact
		}
	} else if strings.IndexByte(r.Tool, ')') >= 0 {
		return bad("unbalanced parenthesis")
	}
	if c.name == "" {
		return bad("tool name is empty")
	}
	for _, ch := range c.name {
		ok := ch == '_' || ch == '-' || ch == '.' || ch == '*' || ch == '?' || ch == '[' || ch == ']' || ch == '^' || ch == '!' ||
			(ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
		if !ok {
			return bad("tool name may hold only letters, digits, _ - . and glob characters")
		}
	}
	if _, err := path.Match(c.name, ""); err != nil {
		return bad("bad tool name glob: %v", err)
	}
	return c, nil
}

// ParseRules decodes and validates the JSON value of tools.permission_rules: an array of
// {"tool": ..., "action": ...} objects with no other keys. null or an empty input means
// no rules. Any malformed rule fails the whole list with an error naming it (its index
// and text); rules are never silently dropped.
func ParseRules(raw json.RawMessage) (Rules, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return Rules{}, nil
	}
	var items []json.RawMessage
	if err := strictUnmarshal(trimmed, &items); err != nil {
		return Rules{}, fmt.Errorf("%w: tools.permission_rules must be a JSON array of {\"tool\", \"action\"} objects: %w", ErrInvalidRule, err)
	}
	rules := Rules{list: make([]Rule, 0, len(items)), compiled: make([]compiledRule, 0, len(items))}
	for i, item := range items {
		var fields struct {
			Tool   *string `json:"tool"`
			Action *string `json:"action"`
		}
		if err := strictUnmarshal(item, &fields); err != nil {
			return Rules{}, fmt.Errorf("%w: tools.permission_rules[%d] %s: must be an object with string keys \"tool\" and \"action\" only: %w", ErrInvalidRule, i, show(clip.String(string(item), msgClip)), err)
		}
		if fields.Tool == nil || fields.Action == nil {
			return Rules{}, fmt.Errorf("%w: tools.permission_rules[%d] %s: both \"tool\" and \"action\" are required", ErrInvalidRule, i, show(clip.String(string(item), msgClip)))
		}
		r := Rule{Tool: *fields.Tool, Action: Action(*fields.Action)}
		c, err := compileRule(r)
		if err != nil {
			return Rules{}, fmt.Errorf("tools.permission_rules[%d]: %w", i, err)
		}
		rules.list = append(rules.list, r)
		rules.compiled = append(rules.compiled, c)
	}
	return rules, nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// subjectKind says what a tool's rule patterns are matched against.
type subjectKind int

const (
	subjectJSON subjectKind = iota
	subjectShell
	subjectPath
	subjectPatch
)

// shellTools take a shell command in the "command" argument.
var shellTools = map[string]bool{"bash": true, "exec": true, "shell": true, "process": true}

// pathTools take a filesystem path in the "path" argument; optionalPath tools default
// to the first working directory.
var (
	pathTools    = map[string]bool{"read": true, "write": true, "edit": true, "list": true, "glob": true, "grep": true}
	optionalPath = map[string]bool{"glob": true, "grep": true}
)

func subjectKindOf(tool string) subjectKind {
	switch {
	case shellTools[tool]:
		return subjectShell
	case pathTools[tool]:
		return subjectPath
	case tool == "apply_patch":
		return subjectPatch
	}
	return subjectJSON
}

// subject is what rule patterns see of one call. When ok is false the call's subject
// could not be determined: patterned deny and ask rules then match (fail closed) and
// patterned allow rules do not.
type subject struct {
	kind     subjectKind
	ok       bool
	raw      string   // shell only: the command as given
	values   []string // shell: the normalised command; path/patch: resolved paths; JSON: canonical args
	segments []string // shell only: each simple command, for deny and ask
	workDir  string   // resolved first working directory, for relative path patterns
}

func makeSubject(sp Speaker, tool string, args json.RawMessage) subject {
	s := subject{kind: subjectKindOf(tool)}
	if len(sp.workDirs) > 0 {
		if wd, err := ResolvePath("", sp.workDirs[0]); err == nil {
			s.workDir = wd
		}
	}
	obj, err := decodeArgs(args)
	if err != nil {
		return s
	}
	switch s.kind {
	case subjectShell:
		cmd, err := argString(obj, "command")
		if err != nil || strings.IndexByte(cmd, 0) >= 0 {
			return s
		}
		s.raw = cmd
		s.values = []string{normaliseCommand(cmd)}
		s.segments = commandSegments(cmd)
	case subjectPath:
		ps, err := argString(obj, "path")
		if optionalPath[tool] && !hasFoldedKey(obj, "path") {
			ps, err = ".", nil
		}
		if err != nil {
			return s
		}
		r, err := ResolvePath(firstWorkDir(sp), ps)
		if err != nil {
			return s
		}
		s.values = []string{r}
	case subjectPatch:
		ps, err := argString(obj, "patch")
		if err != nil {
			return s
		}
		targets, err := PatchTargets(ps)
		if err != nil {
			return s
		}
		for _, t := range targets {
			r, err := ResolvePath(firstWorkDir(sp), t)
			if err != nil {
				return subject{kind: s.kind, workDir: s.workDir}
			}
			s.values = append(s.values, r)
		}
	default:
		cj, err := canonicalJSON(obj)
		if err != nil {
			return s
		}
		s.values = []string{cj}
	}
	s.ok = len(s.values) > 0
	return s
}

// hasFoldedKey reports whether obj has a key equal to key ignoring case.
func hasFoldedKey(obj map[string]any, key string) bool {
	for k := range obj {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

func firstWorkDir(sp Speaker) string {
	if len(sp.workDirs) == 0 {
		return ""
	}
	return sp.workDirs[0]
}

// decodeArgs decodes a tool's arguments object. Empty or null means {}. A key that
// appears twice is an error: tools and this package must not disagree on which value
// counts.
func decodeArgs(args json.RawMessage) (map[string]any, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("arguments are not a JSON object")
	}
	obj := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("arguments are not a JSON object")
		}
		if _, dup := obj[key]; dup {
			return nil, fmt.Errorf("argument %s appears twice", show(clip.String(key, msgClip)))
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		obj[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the arguments object")
	}
	return obj, nil
}

// argString returns the string argument key. It fails when the value is missing or not
// a string, and when another key equals key case-insensitively: encoding/json matches
// struct fields that way, so {"path": "a", "PATH": "/etc/x"} could reach a tool as
// /etc/x while a case-sensitive check saw "a".
func argString(obj map[string]any, key string) (string, error) {
	for k := range obj {
		if k != key && strings.EqualFold(k, key) {
			return "", fmt.Errorf("argument %s is ambiguous with %q", show(clip.String(k, msgClip)), key)
		}
	}
	v, present := obj[key]
	if !present {
		return "", fmt.Errorf("argument %q is missing", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %q is not a string", key)
	}
	return s, nil
}

// canonicalJSON encodes v compactly with object keys sorted at every depth and no HTML
// escaping; numbers keep their original text.
func canonicalJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// matches reports whether c matches a call of tool with subject s.
func (c compiledRule) matches(tool string, s subject) bool {
	if ok, _ := path.Match(c.name, tool); !ok {
		return false
	}
	if c.kind == patternNone {
		return true
	}
	allow := c.rule.Action == ActionAllow
	if !s.ok {
		return !allow
	}
	if allow {
		// Every value must match: a whole command, every patch target.
		for _, v := range s.values {
			if !c.matchValue(s, v, true) {
				return false
			}
		}
		return true
	}
	candidates := s.values
	if s.kind == subjectShell {
		candidates = append(append([]string(nil), s.values...), s.segments...)
	}
	for _, v := range candidates {
		if c.matchValue(s, v, false) {
			return true
		}
	}
	return false
}

// matchValue matches one value. allow selects the narrower reading wherever two are
// possible: allow prefixes end on a word or path-component boundary and never match a
// shell command that chains, pipes, redirects or substitutes; deny and ask prefixes are
// plain string prefixes.
func (c compiledRule) matchValue(s subject, v string, allow bool) bool {
	switch s.kind {
	case subjectShell:
		if allow && (strings.ContainsAny(s.raw, "\n\r") || c.kind != patternExact && hasShellOperator(s.raw)) {
			return false
		}
		p := normaliseCommand(c.pattern)
		if !allow {
			// Deny and ask read widely: in the system's letter case rule
			// for commands (commandForm: ignoring case on Windows).
			p, v = commandForm(p), commandForm(v)
		}
		switch c.kind {
		case patternPrefix:
			if allow {
				return v == p || strings.HasPrefix(v, p+" ")
			}
			return strings.HasPrefix(v, p)
		case patternGlob:
			return globAll(p, v)
		default:
			return v == p
		}
	case subjectPath, subjectPatch:
		p := c.pattern
		if c.kind == patternGlob {
			// Globs match slash-separated names (path.Match), in the
			// system's letter case rule (globForm).
			p = globForm(p)
			if !filepath.IsAbs(c.pattern) {
				if s.workDir == "" {
					return !allow
				}
				p = escapeGlob(globForm(s.workDir)) + "/" + p
			}
			ok, _ := path.Match(path.Clean(p), globForm(v))
			return ok
		}
		if !filepath.IsAbs(p) {
			if s.workDir == "" {
				return !allow
			}
			p = s.workDir + string(filepath.Separator) + p
		}
		// A plain prefix compares separators as the resolved path writes
		// them (deny read(C:/w/se:*) denies C:\w\secret on Windows).
		p = filepath.FromSlash(p)
		switch c.kind {
		case patternPrefix:
			if allow {
				return within(v, filepath.Clean(p))
			}
			return hasPathPrefix(v, p) || within(v, filepath.Clean(p))
		default:
			return samePath(v, filepath.Clean(p))
		}
	default:
		switch c.kind {
		case patternPrefix:
			return strings.HasPrefix(v, c.pattern)
		case patternGlob:
			return globAll(c.pattern, v)
		default:
			return v == c.pattern
		}
	}
}

// globAll is path.Match where * and ? also match '/'.
func globAll(pattern, s string) bool {
	if strings.IndexByte(s, 0) >= 0 {
		return false
	}
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(s, "/", "\x00"))
	return ok
}

// escapeGlob quotes the glob metacharacters of a literal path.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// namesExactly reports whether an allow rule for tool names exactly the
// resolved path: a rule `tool(<path>)` whose pattern is neither a prefix nor
// a glob, relative patterns taken against the first working directory. It is
// what lets the owner write a dangerous file: a rule naming that one path.
func (sp Speaker) namesExactly(tool, resolved string) bool {
	s := subject{kind: subjectPath, values: []string{resolved}, ok: true}
	if len(sp.workDirs) > 0 {
		if wd, err := ResolvePath("", sp.workDirs[0]); err == nil {
			s.workDir = wd
		}
	}
	for _, c := range sp.rules.compiled {
		if c.rule.Action != ActionAllow || c.kind != patternExact {
			continue
		}
		if ok, _ := path.Match(c.name, tool); ok && c.matchValue(s, resolved, true) {
			return true
		}
	}
	return false
}
