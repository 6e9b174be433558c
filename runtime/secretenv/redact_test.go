package secretenv_test

import (
	"strings"
	"testing"

	"github.com/openprogram/openprogram/runtime/secretenv"
)

// Redactor masks the value of every secret variable of env, fixed, by
// suffix and named by the configuration; other values stay. A secret too
// short to mask safely refuses.
func TestRedactor(t *testing.T) {
	env := []string{"OPENPROGRAM_MCP_TOKEN=tok-0123456789abcdef", "MY_API_KEY=sk-live-abcdefgh", "HEADER_SECRET=hdr-secret-value",
		"PATH=/usr/bin:/bin", "EMPTY_API_KEY="}
	redact, err := secretenv.New("HEADER_SECRET").Redactor(env)
	if err != nil {
		t.Fatal(err)
	}
	got := redact("token tok-0123456789abcdef key sk-live-abcdefgh header hdr-secret-value path /usr/bin:/bin")
	for _, secret := range []string{"tok-0123456789abcdef", "sk-live-abcdefgh", "hdr-secret-value"} {
		if strings.Contains(got, secret) {
			t.Errorf("redacted text %q still holds %q", got, secret)
		}
	}
	if !strings.Contains(got, "path /usr/bin:/bin") || strings.Count(got, secretenv.Redacted) != 3 {
		t.Errorf("redacted text = %q, want three masks and the rest as it was", got)
	}
	if _, err := secretenv.New().Redactor([]string{"MY_API_KEY=short"}); err == nil {
		t.Errorf("a 5-byte secret: want an error (it cannot be masked without masking ordinary text)")
	}
}

// A secret that begins with another, shorter one is masked whole, whatever
// the order of the environment: masking the shorter first would leave the
// longer one's tail in the text.
func TestRedactorMasksTheLongerOfOverlappingSecrets(t *testing.T) {
	for _, env := range [][]string{
		{"A_API_KEY=sk-live-abcdefgh", "B_API_KEY=sk-live-abcdefgh-TAIL-SECRET"},
		{"B_API_KEY=sk-live-abcdefgh-TAIL-SECRET", "A_API_KEY=sk-live-abcdefgh"},
	} {
		redact, err := secretenv.New().Redactor(env)
		if err != nil {
			t.Fatal(err)
		}
		if got := redact("key sk-live-abcdefgh-TAIL-SECRET end"); got != "key "+secretenv.Redacted+" end" {
			t.Errorf("env %q: redacted = %q, want the longer secret masked whole", env, got)
		}
	}
}

// The OTLP exporter's headers (where a hosted backend's API key goes) are
// secrets: a tool's environment is stripped of them, and the Redactor
// masks each header's value.
func TestOTLPHeadersAreSecrets(t *testing.T) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"} {
		if got := secretenv.New().Strip([]string{name + "=x-api-key=collector-secret-1", "PATH=/bin"}); len(got) != 1 {
			t.Errorf("Strip kept %s: %q", name, got)
		}
	}
	redact, err := secretenv.New().Redactor([]string{"OTEL_EXPORTER_OTLP_HEADERS=x-api-key=collector-secret-1, authorization=Bearer%20bearer-secret-2"})
	if err != nil {
		t.Fatal(err)
	}
	got := redact("a collector-secret-1 b Bearer bearer-secret-2 c")
	if strings.Contains(got, "collector-secret-1") || strings.Contains(got, "bearer-secret-2") {
		t.Errorf("redacted = %q, want each header value masked", got)
	}
}

// A secret is masked whatever its letter case: an API key upper-cased
// (a hex key reads back from it by lower-casing) is the key.
func TestRedactorIgnoresLetterCase(t *testing.T) {
	redact, err := secretenv.New().Redactor([]string{"MY_API_KEY=abcdef0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	if got := redact("é ABCDEF0123456789 and AbCdEf0123456789 é"); got != "é "+secretenv.Redacted+" and "+secretenv.Redacted+" é" {
		t.Errorf("redacted = %q, want both spellings masked and the rest as it was", got)
	}
}

// Text that is not valid UTF-8 is masked where its secrets are, and the
// rest of it is left byte for byte.
func TestRedactorKeepsInvalidUTF8(t *testing.T) {
	redact, err := secretenv.New().Redactor([]string{"MY_API_KEY=abcdef0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	if got := redact("\xff\xfeX abcdef0123456789 \xff"); got != "\xff\xfeX "+secretenv.Redacted+" \xff" {
		t.Errorf("redacted = %q", got)
	}
}
