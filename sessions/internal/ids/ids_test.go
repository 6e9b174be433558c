package ids

import (
	"regexp"
	"testing"
)

func TestMessageID(t *testing.T) {
	re := regexp.MustCompile(`^msg_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	prev := ""
	for range 10000 {
		id := MessageID()
		if !re.MatchString(id) {
			t.Fatalf("MessageID() = %q, want msg_ and 32 lowercase hex digits", id)
		}
		if seen[id] {
			t.Fatalf("MessageID() repeated %q", id)
		}
		seen[id] = true
		if id[:16] < prev[:min(16, len(prev))] { // millisecond prefix never goes back
			t.Fatalf("MessageID() time prefix went backwards: %q after %q", id, prev)
		}
		prev = id
	}
}
