package authz_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/internal/clip"
)

// diff returns "" when got and want are deeply equal, else a readable description.
// (The module keeps zero requirements, so no go-cmp.)
func diff(got, want any) string {
	if reflect.DeepEqual(got, want) {
		return ""
	}
	return fmt.Sprintf("\n got: %#v\nwant: %#v", got, want)
}

func mustContain(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s = %q, want it to contain %q", what, s, sub)
	}
}

// refusedCode marks, in a test's expected decision, a speaker shape the
// constructor refuses: no speaker exists, so nothing is decided.
const refusedCode = "SPEAKER_REFUSED"

// refused is the expected outcome of a speaker shape the constructor refuses.
func refused(msg string) want { return want{code: refusedCode, msg: msg} }

// decide makes req's speaker and decides the call with it; a shape the
// constructor refuses comes back as a decision with reason refusedCode and
// the constructor's error as its message.
func decide(t *testing.T, req authz.Request, tool string, args json.RawMessage) authz.Decision {
	t.Helper()
	sp, err := req.Speaker()
	if err != nil {
		return authz.Decision{ReasonCode: refusedCode, Message: err.Error()}
	}
	return authz.Decide(sp, tool, args)
}

// speaker makes req's speaker or fails the test.
func speaker(t testing.TB, req authz.Request) authz.Speaker {
	t.Helper()
	sp, err := req.Speaker()
	if err != nil {
		t.Fatalf("make the speaker: %v", err)
	}
	return sp
}

// outcome names what a decision for an interactive owner says of the
// rules: "allow" (an allow rule matched, or nothing needed one),
// "approval" (nothing decided, or an ask rule matched), "deny" (a deny
// rule matched), else "other: " and the reason.
func outcome(d authz.Decision) string {
	switch {
	case d.Allowed:
		return "allow"
	case d.NeedsApproval:
		return "approval"
	case d.ReasonCode == authz.ReasonRuleDeny:
		return "deny"
	}
	return "other: " + d.ReasonCode + " " + d.Message
}

// shown is how a denial names a path the call gave: quoted when it has a
// backslash, a quote, a leading or trailing space or an unprintable rune
// (Windows paths are quoted for their backslashes), clipped to 64 bytes.
func shown(p string) string {
	p = clip.String(p, 64)
	if p == "" || strings.TrimSpace(p) != p || strings.ContainsAny(p, `"\`) {
		return strconv.Quote(p)
	}
	for _, r := range p {
		if !strconv.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}
