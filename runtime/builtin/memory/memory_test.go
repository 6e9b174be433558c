package memory_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const principal = "owner/install/fedcba9876543210"

func TestToolsOrderAndCapabilities(t *testing.T) {
	var names []string
	for _, tl := range memory.Tools(nil) {
		names = append(names, tl.Name())
		if tl.Capability() != authz.ToolCapability(tl.Name()) {
			t.Errorf("%s declares %s, the authz table says %s", tl.Name(), tl.Capability(), authz.ToolCapability(tl.Name()))
		}
	}
	want := []string{"memory_status", "memory_search", "memory_grep", "memory_get", "memory_browse", "memory_update", "memory_promote"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Tools() names (-want +got):\n%s", diff)
	}
}
