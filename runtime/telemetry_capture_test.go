package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/runtime/secretenv"
)

// A captured text longer than captureLimit is masked before it is clipped:
// a secret the clip would cut in two is not left half in the span.
func TestCapturedMasksBeforeItClips(t *testing.T) {
	const secret = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz"
	redact, err := secretenv.New().Redactor([]string{"MODEL_API_KEY=" + secret})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", captureLimit-12) + secret + " and more"
	got := captured(redact, text)
	if strings.Contains(got, secret[:12]) {
		t.Errorf("captured text ends %q: the start of the secret is left in it", got[len(got)-40:])
	}
	if len(got) > captureLimit+len("...") {
		t.Errorf("captured text is %d bytes, want at most %d", len(got), captureLimit+len("..."))
	}
}

// A secret a model writes into a tool's arguments with JSON escapes is
// masked too: the arguments are masked as their decoded text reads.
func TestCaptureToolArgumentsMasksEscapedSecret(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	redact, err := secretenv.New().Redactor([]string{"MODEL_API_KEY=" + secret})
	if err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"command":"echo \u0073k-live-0123456789abcdef","n":12345678901234567890}`)
	got := capturedArguments(redact, args)
	var v struct{ Command string }
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("captured arguments %q are not JSON: %v", got, err)
	}
	if strings.Contains(v.Command, secret) {
		t.Errorf("captured arguments %q hold the secret", got)
	}
	if !strings.Contains(got, "12345678901234567890") {
		t.Errorf("captured arguments %q lost a number's digits", got)
	}
}
