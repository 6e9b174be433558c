package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/secretenv"
	"github.com/openprogram/openprogram/sessions"
)

// ConfigFileName is the configuration file inside the state directory.
const ConfigFileName = "config.json"

// maxConfigBytes bounds config.json so a runaway file cannot exhaust memory.
const maxConfigBytes = 1 << 20

// configKey describes one setting: its dotted name, what it is for, the
// value a missing key reads as, and the validator every write goes through.
type configKey struct {
	name     string
	help     string
	def      any
	validate func(v any) error
}

// validToolName reports whether s matches ^[A-Za-z0-9_.-]{1,128}$.
func validToolName(s string) bool {
	isToolByte := func(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }
	return validName(s, 128, isToolByte, isToolByte)
}

// configKeys is every key config.json may hold, in `config list` order.
var configKeys = []configKey{
	{"mcp_server.exposed_tools", "runtime tools MCP clients may discover and call (a JSON list; [] exposes none; read when `mcp serve` starts)", []any{}, validateToolList},
	{"mcp_server.tasks.enabled", "whether mcp serve offers durable MCP tasks for prompt_send (each task's turn runs in a detached runner process that outlives the client; read when `mcp serve` starts)", false, validateBool},
	{"mcp_server.tasks.max_working", "the most tasks one client identity may have working at once", json.Number("4"), validateTasksWorking},
	{"mcp_server.tasks.default_ttl", `how long a task and its result are kept when the client asks for no ttl ("1h"; at most mcp_server.tasks.max_ttl)`, "1h", validateTaskTTL},
	{"mcp_server.tasks.max_ttl", `the longest a client may ask a task and its result to be kept ("24h" at most)`, "24h", validateTaskTTL},
	{"audit.on_failure", "what mcp serve does with a prompt_send or tool_call whose audit record cannot be written: refuse (before anything runs) or log (run it unaudited)", "refuse", validateEnum("refuse", "log")},
	{"store.url", "the session store: sqlite:<path> or postgres://... (default: sqlite in the state directory)", "", validateStoreURL},
	{"model.provider", "the model provider: openai, anthropic or scripted", "", validateEnum("openai", "anthropic", "scripted")},
	{"model.name", "the model name sent to the provider", "", validateString},
	{"model.base_url", "the provider's base URL (OpenAI-compatible servers: Ollama, vLLM, llama.cpp, LM Studio, OpenRouter)", "", validateBaseURL},
	{"model.api_key_env", "the environment variable that holds the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY; none: the server takes no key, at any URL)", "", validateKeyEnv},
	{"model.script", "the JSON script the scripted provider replays", "", validateString},
	{"model.temperature", "sampling temperature, 0 to 2 (null: the server's default; the anthropic provider refuses it)", nil, validateFloat(0, 2, true)},
	{"model.top_p", "nucleus sampling, above 0 and at most 1 (null: the server's default; the anthropic provider refuses it)", nil, validateFloat(0, 1, false)},
	{"model.max_output_tokens", "the longest reply in tokens (null: the server's default; anthropic: 8192)", nil, validateInt(1, 1<<24)},
	{"model.timeout", `the longest silence of one model request: the wait for the response and each gap in the stream ("90s", "5m")`, "120s", validateDuration},
	{"model.turn_timeout", `the longest a whole prompt may take, model calls, retries and tools together (null: no limit)`, nil, validateDuration},
	{"model.headers", `extra HTTP headers for every model request, a JSON object of strings; ${NAME} in a value is read from the environment`, map[string]any{}, validateHeaders},
	{"model.context_tokens", "the model's context window in tokens: older turns are left out of what is sent to fit it (null: send the whole session)", nil, validateInt(256, 1<<24)},
	{"tools.permission_rules", `permission rules: [{"tool":"name or name(pattern)","action":"allow|ask|deny"}]`, []any{}, validateRules},
	{"agent.system_prompt", "the system prompt of the main agent", "", validateString},
	{"agent.work_dirs", "absolute directories the runtime's file tools are confined to", []any{}, validateWorkDirs},
	{"agent.max_steps", "the most model calls one prompt may make", json.Number("20"), validateInt(1, 1000)},
}

// secretKeys are keys whose values hold secrets: list and get redact them
// unless asked not to.
var secretKeys = map[string]bool{"store.url": true, "model.base_url": true, "model.headers": true}

// redactValue hides the secret parts of key's value: a URL's credentials
// (sessions.RedactURL), every value of an object (HTTP headers).
func redactValue(key string, v any) any {
	if !secretKeys[key] {
		return v
	}
	switch v := v.(type) {
	case string:
		return sessions.RedactURL(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k := range v {
			out[k] = "xxxxx"
		}
		return out
	}
	return v
}

// unknownKeyError says that name is no config key, and which one was
// probably meant: a usage error for a key typed on the command line.
func unknownKeyError(name string) error {
	return usageError{unknownKeyMessage(name)}
}

func unknownKeyMessage(name string) string {
	if guess := closestKey(name); guess != "" {
		return fmt.Sprintf("unknown config key %q: did you mean %q? (openprogram config list shows every key)", name, guess)
	}
	return fmt.Sprintf("unknown config key %q (known keys: %s)", name, knownKeys())
}

// closestKey returns the known key nearest to name: the one it is the last
// part of, or one within a small edit distance; "" when none is close.
func closestKey(name string) string {
	lower := strings.ToLower(name)
	best, bestDist := "", 0
	for _, k := range configKeys {
		if strings.HasSuffix(k.name, "."+lower) || k.name == lower {
			return k.name
		}
		d := editDistance(lower, k.name)
		if best == "" || d < bestDist {
			best, bestDist = k.name, d
		}
	}
	if bestDist <= max(2, len(name)/5) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func lookupKey(name string) (configKey, bool) {
	for _, k := range configKeys {
		if k.name == name {
			return k, true
		}
	}
	return configKey{}, false
}

func knownKeys() string {
	names := make([]string, len(configKeys))
	for i, k := range configKeys {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

// Config is the parsed config.json: dotted key -> JSON value. Only known keys,
// each valid, are ever held.
type Config struct {
	values map[string]any
}

// LoadConfig reads <stateDir>/config.json. A missing file is an empty config;
// a malformed file, an unknown key or an invalid value is an error that names it.
func LoadConfig(stateDir string) (*Config, error) {
	path := filepath.Join(stateDir, ConfigFileName)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Config{values: map[string]any{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxConfigBytes+1)); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if buf.Len() > maxConfigBytes {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, maxConfigBytes)
	}
	c, err := parseConfig(buf.Bytes())
	if err != nil {
		// config set/unset load the file first, so they cannot repair it.
		return nil, fmt.Errorf("%s: %w; edit or remove the file (openprogram config cannot change it while it is invalid)", path, err)
	}
	return c, nil
}

func parseConfig(data []byte) (*Config, error) {
	c := &Config{values: map[string]any{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	for section, raw := range root {
		obj, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("section %q must be an object", section)
		}
		if err := c.setAll(section, obj); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// setAll sets every member of obj under prefix: a member that is no key
// itself but an object is a group of keys (mcp_server.tasks).
func (c *Config) setAll(prefix string, obj map[string]any) error {
	for name, v := range obj {
		key := prefix + "." + name
		if sub, ok := v.(map[string]any); ok && isKeyGroup(key) {
			if err := c.setAll(key, sub); err != nil {
				return err
			}
			continue
		}
		if err := c.set(key, v); err != nil {
			return err
		}
	}
	return nil
}

// isKeyGroup reports whether group is no key but the prefix of some.
func isKeyGroup(group string) bool {
	if _, ok := lookupKey(group); ok {
		return false
	}
	for _, k := range configKeys {
		if strings.HasPrefix(k.name, group+".") {
			return true
		}
	}
	return false
}

// set validates and stores one value.
func (c *Config) set(key string, v any) error {
	k, ok := lookupKey(key)
	if !ok {
		return errors.New(unknownKeyMessage(key))
	}
	if err := k.validate(v); err != nil {
		return fmt.Errorf("invalid value for %s: %w", key, err)
	}
	c.values[key] = v
	return nil
}

// Get returns the value of key, or its default when unset, and whether it was set.
func (c *Config) Get(key string) (any, bool, error) {
	k, ok := lookupKey(key)
	if !ok {
		return nil, false, unknownKeyError(key)
	}
	if v, ok := c.values[key]; ok {
		return v, true, nil
	}
	return k.def, false, nil
}

// String returns a string setting ("" when unset).
func (c *Config) String(key string) string {
	v, _, _ := c.Get(key)
	s, _ := v.(string)
	return s
}

// Strings returns a list-of-strings setting (empty when unset).
func (c *Config) Strings(key string) []string {
	v, _, _ := c.Get(key)
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Rules returns tools.permission_rules, parsed.
func (c *Config) Rules() ([]authz.Rule, error) {
	v, _, _ := c.Get("tools.permission_rules")
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode tools.permission_rules: %w", err)
	}
	return authz.ParseRules(raw)
}

// Marshal renders the config as the nested JSON object stored on disk.
func (c *Config) Marshal() ([]byte, error) {
	root := map[string]any{}
	for key, v := range c.values {
		parts := strings.Split(key, ".")
		obj := root
		for _, p := range parts[:len(parts)-1] {
			sub, ok := obj[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				obj[p] = sub
			}
			obj = sub
		}
		obj[parts[len(parts)-1]] = v
	}
	data, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return append(data, '\n'), nil
}

// Save writes the config atomically: a 0600 temp file in the same directory,
// fsync, rename over config.json, fsync the directory. On any failure the old
// file is left as it was.
func (c *Config) Save(stateDir string) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(stateDir, ConfigFileName), data, 0o600)
}

// writeFileAtomic replaces path with data, mode perm: a temp file in the
// same directory, fsync, rename over path, fsync the directory. On any
// failure the old file is left as it was.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// parseValue reads a command-line VALUE for k. A list or object key, or a
// value that looks like a JSON list or object, must be valid JSON (else an
// error); anything else is JSON when it is valid JSON, else the literal
// string.
func parseValue(k configKey, s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		return v, nil
	}
	switch k.def.(type) {
	case []any:
		return nil, fmt.Errorf(`not valid JSON (%v): want a JSON list, in single quotes, e.g. '["memory_search"]'`, err)
	case map[string]any:
		return nil, fmt.Errorf(`not valid JSON (%v): want a JSON object, in single quotes, e.g. '{"X-Name":"value"}'`, err)
	}
	if trimmed := strings.TrimSpace(s); strings.HasPrefix(trimmed, "[") || strings.HasPrefix(trimmed, "{") {
		return nil, fmt.Errorf("not valid JSON (%v); give the whole value in single quotes", err)
	}
	return s, nil
}

// encodeValue renders a value compactly, keys sorted, for `config get`.
func encodeValue(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func validateString(v any) error {
	if _, ok := v.(string); !ok {
		return fmt.Errorf("want a string, got %s", jsonKind(v))
	}
	return nil
}

func validateEnum(allowed ...string) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a string, got %s", jsonKind(v))
		}
		if s == "" {
			return nil
		}
		for _, a := range allowed {
			if s == a {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", s, strings.Join(allowed, ", "))
	}
}

func validateToolList(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf(`want a JSON list of tool names such as '["memory_search"]', got %s`, jsonKind(v))
	}
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return fmt.Errorf("entry %d: want a tool name string, got %s", i, jsonKind(e))
		}
		if !validToolName(s) {
			return fmt.Errorf("entry %d: %q is not a valid tool name", i, s)
		}
	}
	return nil
}

func validateStoreURL(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, got %s", jsonKind(v))
	}
	if s == "" || strings.HasPrefix(s, "sqlite:") || strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return nil
	}
	return fmt.Errorf("%q is not a store URL: use sqlite:<path> or postgres://user@host/db", sessions.RedactURL(s))
}

func validateBaseURL(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, got %s", jsonKind(v))
	}
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", sessions.RedactURL(s))
	}
	return nil
}

func validateEnvName(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, got %s", jsonKind(v))
	}
	if s != "" && !secretenv.ValidName(s) {
		return fmt.Errorf("%q is not an environment variable name", s)
	}
	return nil
}

func validateRules(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, ok := v.([]any); !ok {
		return fmt.Errorf("want a JSON list of rules, got %s", jsonKind(v))
	}
	_, err = authz.ParseRules(raw)
	return err
}

func validateWorkDirs(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a JSON list of absolute directories, got %s", jsonKind(v))
	}
	for i, e := range list {
		s, ok := e.(string)
		if !ok || !filepath.IsAbs(s) {
			return fmt.Errorf("entry %d: want an absolute directory path", i)
		}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
