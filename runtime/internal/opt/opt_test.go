package opt

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{{0, 5}, {-1, 5}, {3, 3}} {
		v := tc.in
		Positive(&v, 5)
		if v != tc.want {
			t.Errorf("Positive(%v, 5) = %v, want %v", tc.in, v, tc.want)
		}
	}
	n := 0
	Positive(&n, 7)
	if n != 7 {
		t.Errorf("Positive(0, 7) = %d, want 7", n)
	}
}
