package contracts_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The client tests and examples run go-sdk sessions over in-memory
// transports; every goroutine they start must be gone at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
