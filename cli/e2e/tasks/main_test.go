//go:build unix

package tasks

import (
	"flag"
	"strconv"
	"testing"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

// parallel is how many cases run at once unless -test.parallel says
// otherwise: they wait on the fake model's 90 s turn, not on the CPU, so
// running all of them together makes the package take one turn's time
// instead of one per GOMAXPROCS cases.
const parallel = 5

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(parallel))
	}
	e2etest.Main(m, e2etest.TestBuild)
}
