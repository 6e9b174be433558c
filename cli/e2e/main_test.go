//go:build unix

package e2e

import (
	"testing"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m, e2etest.TestBuild) }
