package runtime

import (
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
