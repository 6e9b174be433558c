package opencode

import (
	"testing"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m, e2etest.TestBuild) }
