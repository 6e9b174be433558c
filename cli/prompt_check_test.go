package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPromptRefusesWhatPromptSendRefuses: the console checks a prompt with
// prompt_send's own rule, so what an MCP client cannot send the owner
// cannot either (a prompt of a byte order mark alone is blank to both), and
// what prompt_send takes the console takes. A refused prompt is a usage
// error that runs nothing.
func TestPromptRefusesWhatPromptSendRefuses(t *testing.T) {
	env, _ := fresh(t)
	script, _ := json.Marshal([]map[string]string{{"text": "ok"}, {"text": "ok"}})
	scriptedModel(t, env, string(script))
	for _, c := range []struct {
		prompt, want string
	}{
		{" \t\n", "blank"},
		{"\u00a0\u3000", "blank"},
		{"\ufeff", "blank"},
		{"a\x00b", "NUL"},
	} {
		r := runCLI(t, env, "prompt", c.prompt)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("prompt %q = exit %d, stdout %q, stderr %q; want exit 2 naming %s", c.prompt, r.code, r.stdout, r.stderr, c.want)
		}
	}
	if r := runCLI(t, env, "prompt", "\u00a0hi"); r.code != 0 || !strings.Contains(r.stdout, "ok") {
		t.Errorf("prompt with a leading no-break space = exit %d, stdout %q, stderr %q; want it answered", r.code, r.stdout, r.stderr)
	}
}
