//go:build unix

package runtime_test

import (
	"fmt"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
)

// The error names what is missing and how to set it in the POSIX shell
// (on Windows in PowerShell: TestNewProviderHintsArePowerShell).
func ExampleNewProvider() {
	_, err := runtime.NewProvider(provider.Config{Provider: "openai", Model: "gpt-4o-mini"}, func(string) string { return "" })
	fmt.Println(err)
	// Output: model provider not configured: the openai provider needs an API key for the OpenAI API: export OPENAI_API_KEY='<key>' before starting openprogram (or name another variable with `openprogram config set model.api_key_env NAME`); a local server on a loopback model.base_url needs no key, and for a keyless server elsewhere run `openprogram config set model.api_key_env none`
}
