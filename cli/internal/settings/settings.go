// Package settings is the configuration of the openprogram command: where
// the state directory is ([StateDir]), and config.json in it, the
// environment and the defaults, loaded by one loader ([Load]) into one typed
// [Config] that embeds the host.Config the host is built from. Every key is
// in one table ([Keys]: name, default, help, whether it is secret, and its
// one parser), which the loader, `config get/set/unset/list`, the man page
// and the completion scripts all read; nothing after the loader checks a
// value again.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/secretenv"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// FileName is the configuration file inside the state directory.
const FileName = "config.json"

// maxConfigBytes bounds config.json so a runaway file cannot exhaust memory.
const maxConfigBytes = 1 << 20

// Key describes one setting: its dotted name, what it is for, the value a
// missing key reads as, whether its value is a secret (config get and list
// redact it), and its one parser, which validates a JSON value and stores
// it, typed, in a Config.
type Key struct {
	// Name is the dotted name, e.g. "mcp_server.exposed_tools".
	Name string
	// Help says what the key is for (config list, the man page).
	Help string
	// Default is the value a missing key reads as, as config.json holds it.
	Default any
	// Secret marks a value config get and list hide unless asked to show
	// secrets.
	Secret bool
	apply  func(c *Config, v any) error
}

// defaultNumber is a default given by a library constant, as config.json
// holds it.
func defaultNumber(n int) json.Number { return json.Number(strconv.Itoa(n)) }

// durationText is a default given by a library constant, as a person
// writes it: whole hours in hours ("24h"), anything else in seconds
// ("120s").
func durationText(d time.Duration) string {
	if d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// keys is every key config.json may hold, in `config list` order: the one
// table of keys, their types (the parser), defaults, secrets and help
// (config list, completion and the man page read it through Keys).
var keys = []Key{
	{"mcp_server.exposed_tools", "runtime tools MCP clients may discover and call (a JSON list; [] exposes none; read when `mcp serve` starts)", []any{}, false,
		into(parseToolList, func(c *Config, v []string) { c.MCPServer.ExposedTools = v })},
	{"mcp_server.tasks.enabled", "whether mcp serve offers durable MCP tasks for prompt_send (each task's turn runs in a detached runner process that outlives the client; false turns them off; read when `mcp serve` starts)", true, false,
		into(parseBool, func(c *Config, v bool) { c.MCPServer.Tasks.Enabled = v })},
	{"mcp_server.tasks.max_working", "the most tasks one client identity may have working at once", defaultNumber(mcpserver.DefaultTaskMaxWorking), false,
		into(parseTasksWorking, func(c *Config, v int) { c.MCPServer.Tasks.MaxWorking = v })},
	{"mcp_server.tasks.max_runners", "the most task runner processes alive at once for this state directory, all clients together (each client also at most mcp_server.tasks.max_working)", defaultNumber(host.DefaultTaskMaxRunners), false,
		into(parseTasksRunners, func(c *Config, v int) { c.MCPServer.Tasks.MaxRunners = v })},
	{"mcp_server.tasks.default_ttl", `how long a task and its result are kept when the client asks for no ttl ("1h"; at most mcp_server.tasks.max_ttl)`, durationText(mcpserver.DefaultTaskTTL), false,
		into(parseTaskTTL, func(c *Config, v time.Duration) { c.MCPServer.Tasks.DefaultTTL = v })},
	{"mcp_server.tasks.max_ttl", `the longest a client may ask a task and its result to be kept ("24h" at most)`, durationText(mcpserver.DefaultTaskMaxTTL), false,
		into(parseTaskTTL, func(c *Config, v time.Duration) { c.MCPServer.Tasks.MaxTTL = v })},
	{"audit.on_failure", "what mcp serve does with a prompt_send or tool_call whose audit record cannot be written: refuse (before anything runs) or log (run it unaudited)", "refuse", false,
		into(parseEnum("refuse", "log"), func(c *Config, v string) { c.Audit.LogFailures = v == "log" })},
	{"telemetry.endpoint", "the OTLP collector traces and metrics go to (e.g. http://collector:4318; OTEL_EXPORTER_OTLP_PROTOCOL=grpc for gRPC); empty: no telemetry unless OTEL_EXPORTER_OTLP_ENDPOINT is set, which wins", "", true,
		into(parseBaseURL, func(c *Config, v string) { c.Telemetry.Endpoint = v })},
	{"telemetry.service_name", "service.name of this server's telemetry (OTEL_SERVICE_NAME wins)", host.DefaultServiceName, false,
		into(parseString, func(c *Config, v string) { c.Telemetry.ServiceName = v })},
	{"telemetry.capture_content", "true: telemetry also carries prompts, replies and tool arguments and results, every secret of the environment masked (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT wins)", false, false,
		into(parseBool, func(c *Config, v bool) { c.Telemetry.CaptureContent = v })},
	{"store.url", "the session store: sqlite:<path> or postgres://... (default: sqlite in the state directory)", "", true,
		into(parseStoreURL, func(c *Config, v string) { c.fileStoreURL = v })},
	{"model.provider", "the model provider: openai, anthropic or scripted", "", false,
		into(parseEnum("openai", "anthropic", "scripted"), func(c *Config, v string) { c.Model.Provider = v })},
	{"model.name", "the model name sent to the provider", "", false,
		into(parseString, func(c *Config, v string) { c.Model.Model = v })},
	{"model.base_url", "the provider's base URL (OpenAI-compatible servers: Ollama, vLLM, llama.cpp, LM Studio, OpenRouter)", "", true,
		into(parseBaseURL, func(c *Config, v string) { c.Model.BaseURL = v })},
	{"model.api_key_env", "the environment variable that holds the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY; none: the server takes no key, at any URL)", "", false,
		into(parseKeyEnv, func(c *Config, v string) { c.Model.APIKeyEnv = v })},
	{"model.script", "the JSON script the scripted provider replays", "", false,
		into(parseString, func(c *Config, v string) { c.Model.Script = v })},
	{"model.temperature", "sampling temperature, 0 to 2 (null: the server's default; the anthropic provider refuses it)", nil, false,
		into(parseFloat(0, 2, true), func(c *Config, v *float64) { c.Model.Temperature = v })},
	{"model.top_p", "nucleus sampling, above 0 and at most 1 (null: the server's default; the anthropic provider refuses it)", nil, false,
		into(parseFloat(0, 1, false), func(c *Config, v *float64) { c.Model.TopP = v })},
	{"model.max_output_tokens", "the longest reply in tokens (null: the server's default; anthropic: 8192)", nil, false,
		into(parseInt(1, 1<<24), func(c *Config, v int) { c.Model.MaxOutputTokens = v })},
	{"model.timeout", `the longest silence of one model request: the wait for the response and each gap in the stream ("90s", "5m")`, durationText(runtime.DefaultModelTimeout), false,
		into(parseDuration, func(c *Config, v time.Duration) { c.Model.Timeout = v })},
	{"model.turn_timeout", `the longest a whole prompt may take, model calls, retries and tools together (null: no limit)`, nil, false,
		into(parseDuration, func(c *Config, v time.Duration) { c.Agent.TurnTimeout = v })},
	{"model.headers", `extra HTTP headers for every model request, a JSON object of strings; ${NAME} in a value is read from the environment`, map[string]any{}, true,
		into(parseHeaders, func(c *Config, v map[string]string) { c.Model.Headers = v })},
	{"model.allow_unencrypted_key", "true: send the API key and model.headers over plain http:// to a model.base_url that is not this machine, where anyone on the network path can read them (false: refused; loopback and https:// need no opt-in)", false, false,
		into(parseBool, func(c *Config, v bool) { c.Model.AllowUnencryptedKey = v })},
	{"model.context_tokens", "the model's context window in tokens: older turns are left out of what is sent to fit it (null: send the whole session)", nil, false,
		into(parseInt(256, 1<<24), func(c *Config, v int) { c.Agent.ContextTokens = v })},
	{"tools.permission_rules", `permission rules: [{"tool":"name or name(pattern)","action":"allow|ask|deny"}]`, []any{}, false,
		into(parseRules, func(c *Config, v authz.Rules) { c.Tools.PermissionRules = v })},
	{"agent.system_prompt", "the system prompt of the main agent", "", false,
		into(parseString, func(c *Config, v string) { c.Agent.SystemPrompt = v })},
	{"agent.work_dirs", "absolute directories the runtime's file tools are confined to", []any{}, false,
		into(parseWorkDirs, func(c *Config, v []string) { c.Agent.WorkDirs = v })},
	{"agent.max_steps", "the most model calls one prompt may make", defaultNumber(runtime.DefaultMaxSteps), false,
		into(parseInt(1, 1000), func(c *Config, v int) { c.Agent.MaxSteps = v })},
}

// into makes a key's apply from its parser and the field it fills.
func into[T any](parse func(any) (T, error), store func(*Config, T)) func(*Config, any) error {
	return func(c *Config, v any) error {
		t, err := parse(v)
		if err != nil {
			return err
		}
		store(c, t)
		return nil
	}
}

// Keys returns every key config.json may hold, in `config list` order.
func Keys() []Key { return slices.Clone(keys) }

// redact hides the secret parts of key's value: a URL's credentials
// (sessions.RedactURL), every value of an object (HTTP headers).
func redact(key string, v any) any {
	if k, ok := LookupKey(key); !ok || !k.Secret {
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

// UnknownKeyError says that Name is no config key, and which one was
// probably meant. Typed on the command line, it is a usage mistake; in
// config.json, the file is invalid.
type UnknownKeyError struct{ Name string }

func (e *UnknownKeyError) Error() string {
	if guess := closestKey(e.Name); guess != "" {
		return fmt.Sprintf("unknown config key %q: did you mean %q? (openprogram config list shows every key)", e.Name, guess)
	}
	return fmt.Sprintf("unknown config key %q (known keys: %s)", e.Name, knownKeys())
}

// closestKey returns the known key nearest to name: the one it is the last
// part of, or one within a small edit distance; "" when none is close.
func closestKey(name string) string {
	lower := strings.ToLower(name)
	best, bestDist := "", 0
	for _, k := range keys {
		if strings.HasSuffix(k.Name, "."+lower) || k.Name == lower {
			return k.Name
		}
		d := editDistance(lower, k.Name)
		if best == "" || d < bestDist {
			best, bestDist = k.Name, d
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

// LookupKey returns the key called name.
func LookupKey(name string) (Key, bool) {
	for _, k := range keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

func knownKeys() string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// Config is the configuration, typed: config.json, then the environment,
// over the defaults of the keys, each value checked by its key's parser.
// [Load] is the one loader that produces it; the embedded
// host.Config is what the host is built from, and nothing downstream
// checks those values again.
type Config struct {
	host.Config
	// file holds the keys config.json sets, as the JSON values it holds:
	// what config get, list and set show and write back.
	file map[string]any
	// fileStoreURL is store.url as config.json has it; Config.StoreURL is
	// the store actually used (OPENPROGRAM_DATABASE_URL, then store.url,
	// then SQLite in the state directory).
	fileStoreURL string
}

// From says where [Load] reads from besides config.json.
type From struct {
	// Env is the environment: OPENPROGRAM_DATABASE_URL, and with ModelEnv
	// the model overrides ([ModelEnvOverrides]).
	Env Env
	// ModelEnv applies the model overrides: what the commands that run
	// turns (mcp serve, chat, prompt, doctor) see. config get, set and list
	// show config.json alone.
	ModelEnv bool
}

// Load is the one loader: config.json of stateDir (every key known and
// valid, or an error naming it), the defaults of the keys it does not set,
// then the environment as from says; the store URL resolved.
func Load(stateDir string, from From) (*Config, error) {
	path := filepath.Join(stateDir, FileName)
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parseConfig(data)
	if err != nil {
		// config set/unset load the file first, so they cannot repair it.
		return nil, fmt.Errorf("%s: %w; edit or remove the file (openprogram config cannot change it while it is invalid)", path, err)
	}
	if from.ModelEnv {
		if err := c.applyModelEnv(from.Env); err != nil {
			return nil, err
		}
	}
	c.resolve(from.Env, stateDir)
	return c, nil
}

// readConfigFile returns the bytes of path, bounded; a missing file is empty.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
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
	return buf.Bytes(), nil
}

// newConfig is the configuration of an empty config.json: every key its
// default.
func newConfig() *Config {
	c := &Config{file: map[string]any{}}
	for _, k := range keys {
		if err := k.apply(c, k.Default); err != nil {
			panic(fmt.Sprintf("config key %s: invalid default: %v", k.Name, err)) // a defect of keys
		}
	}
	return c
}

func parseConfig(data []byte) (*Config, error) {
	c := newConfig()
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
	for _, section := range slices.Sorted(maps.Keys(root)) {
		obj, ok := root[section].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("section %q must be an object", section)
		}
		if err := c.setAll(section, obj); err != nil {
			return nil, err
		}
	}
	if err := c.checkAcrossKeys(); err != nil {
		return nil, err
	}
	return c, nil
}

// setAll sets every member of obj under prefix, in name order: a member
// that is no key itself but an object is a group of keys (mcp_server.tasks).
func (c *Config) setAll(prefix string, obj map[string]any) error {
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		key, v := prefix+"."+name, obj[name]
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
	if _, ok := LookupKey(group); ok {
		return false
	}
	for _, k := range keys {
		if strings.HasPrefix(k.Name, group+".") {
			return true
		}
	}
	return false
}

// set parses one value with its key's parser and stores it, typed and as
// config.json will hold it. A refused value is an error that starts
// "invalid value for <key>: ".
func (c *Config) set(key string, v any) error {
	k, ok := LookupKey(key)
	if !ok {
		return &UnknownKeyError{key}
	}
	if err := k.apply(c, v); err != nil {
		return fmt.Errorf("invalid value for %s: %w", key, err)
	}
	c.file[key] = v
	return nil
}

// unset removes key from config.json: it reads as its default again.
func (c *Config) unset(key string) error {
	k, ok := LookupKey(key)
	if !ok {
		return &UnknownKeyError{key}
	}
	if err := k.apply(c, k.Default); err != nil {
		return fmt.Errorf("config key %s: invalid default: %w", key, err)
	}
	delete(c.file, key)
	return nil
}

// applyModelEnv applies the model overrides from env, each value checked by
// its key's parser; config.json's values (c.file) stay as they are.
func (c *Config) applyModelEnv(env Env) error {
	for _, o := range modelEnvOverrides {
		v := env.Get(o.Env)
		if v == "" {
			continue
		}
		if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
			return fmt.Errorf("%s is %q, a placeholder the MCP client did not fill in: set it, or leave it empty to use %s of config.json", o.Env, v, o.Key)
		}
		k, _ := LookupKey(o.Key)
		var val any = v
		if _, isBool := k.Default.(bool); isBool {
			switch v {
			case "false":
				continue // an opt-in: only "true" changes it
			case "true":
				val = true
			} // anything else: refused by parseBool
		}
		if err := k.apply(c, val); err != nil {
			return fmt.Errorf("%s: invalid value for %s: %w (unset it to use config.json's %s)", o.Env, o.Key, err, o.Key)
		}
	}
	return nil
}

// resolve fills in what comes from outside config.json: the state
// directory and the store (OPENPROGRAM_DATABASE_URL, else store.url, else
// SQLite in the state directory).
func (c *Config) resolve(env Env, stateDir string) {
	c.StateDir = stateDir
	switch {
	case env.Get(EnvDatabaseURL) != "":
		c.StoreURL = env.Get(EnvDatabaseURL)
	case c.fileStoreURL != "":
		c.StoreURL = c.fileStoreURL
	default:
		c.StoreURL = "sqlite:" + filepath.Join(stateDir, DatabaseFileName)
	}
}

// Get returns the value of key as config.json holds it, or its default
// when unset, and whether it was set.
func (c *Config) Get(key string) (any, bool, error) {
	k, ok := LookupKey(key)
	if !ok {
		return nil, false, &UnknownKeyError{key}
	}
	if v, ok := c.file[key]; ok {
		return v, true, nil
	}
	return k.Default, false, nil
}

// Marshal renders the config as the nested JSON object stored on disk.
func (c *Config) Marshal() ([]byte, error) {
	root := map[string]any{}
	for key, v := range c.file {
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

// Save writes the config atomically, mode 0600 (privatefile.Replace).
func (c *Config) Save(stateDir string) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	return privatefile.Replace(filepath.Join(stateDir, FileName), data)
}

// parseValue reads a command-line VALUE for k. A list or object key, or a
// value that looks like a JSON list or object, must be valid JSON (else an
// error); anything else is JSON when it is valid JSON, else the literal
// string.
func (k Key) parseValue(s string) (any, error) {
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
	switch k.Default.(type) {
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

// Encode renders a value compactly, keys sorted, as `config get` prints it.
func Encode(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// The parsers: each validates one JSON value (as encoding/json decodes it,
// numbers as json.Number) and returns it typed, or an error that says what
// is wanted.

func parseString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %s", jsonKind(v))
	}
	return s, nil
}

func parseEnum(allowed ...string) func(any) (string, error) {
	return func(v any) (string, error) {
		s, err := parseString(v)
		if err != nil || s == "" || slices.Contains(allowed, s) {
			return s, err
		}
		return "", fmt.Errorf("%q is not one of %s", s, strings.Join(allowed, ", "))
	}
}

func parseToolList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf(`want a JSON list of tool names such as '["memory_search"]', got %s`, jsonKind(v))
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("entry %d: want a tool name string, got %s", i, jsonKind(e))
		}
		if !tool.ValidName(s) {
			return nil, fmt.Errorf("entry %d: %q is not a valid tool name", i, s)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseStoreURL(v any) (string, error) {
	s, err := parseString(v)
	if err != nil || s == "" || strings.HasPrefix(s, "sqlite:") || strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return s, err
	}
	return "", fmt.Errorf("%q is not a store URL: use sqlite:<path> or postgres://user@host/db", sessions.RedactURL(s))
}

func parseBaseURL(v any) (string, error) {
	s, err := parseString(v)
	if err != nil || s == "" {
		return s, err
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", sessions.RedactURL(s))
	}
	return s, nil
}

func parseEnvName(v any) (string, error) {
	s, err := parseString(v)
	if err != nil {
		return "", err
	}
	if s != "" && !secretenv.ValidName(s) {
		return "", fmt.Errorf("%q is not an environment variable name", s)
	}
	return s, nil
}

func parseRules(v any) (authz.Rules, error) {
	if _, ok := v.([]any); !ok {
		return authz.Rules{}, fmt.Errorf("want a JSON list of rules, got %s", jsonKind(v))
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return authz.Rules{}, err
	}
	return authz.ParseRules(raw)
}

func parseWorkDirs(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON list of absolute directories, got %s", jsonKind(v))
	}
	var out []string
	for i, e := range list {
		s, ok := e.(string)
		if !ok || !filepath.IsAbs(s) {
			return nil, fmt.Errorf("entry %d: want an absolute directory path", i)
		}
		out = append(out, s)
	}
	return out, nil
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
