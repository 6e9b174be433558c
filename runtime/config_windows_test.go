//go:build windows

package runtime_test

import (
	"strings"
	"testing"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
)

// TestNewProviderHintsArePowerShell: on Windows the text that says how to set
// a missing key shows PowerShell's syntax ($env:NAME = '...'), never the
// POSIX shell's export, which PowerShell and cmd do not have.
func TestNewProviderHintsArePowerShell(t *testing.T) {
	noenv := func(string) string { return "" }
	for _, c := range []struct {
		cfg  provider.Config
		want string
	}{
		{provider.Config{Provider: "openai", Model: "m"}, `$env:OPENAI_API_KEY = '<key>'`},
		{provider.Config{Provider: "anthropic", Model: "m"}, `$env:ANTHROPIC_API_KEY = '<key>'`},
		{provider.Config{Provider: "openai", Model: "m", BaseURL: "http://10.0.0.5:8000/v1", APIKeyEnv: "VLLM_KEY"}, `$env:VLLM_KEY = '<key>'`},
		{provider.Config{Provider: "openai", Model: "m", APIKeyEnv: "none", Settings: provider.Settings{
			Headers: map[string]string{"api-key": "${AZURE_KEY}"}}}, `$env:AZURE_KEY = '<value>'`},
	} {
		_, err := runtime.NewProvider(c.cfg, noenv)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "export ") {
			t.Errorf("NewProvider(%+v) = %v, want a hint with %s and no export", c.cfg, err, c.want)
		}
	}
}
