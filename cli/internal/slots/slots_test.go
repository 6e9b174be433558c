package slots

import (
	"context"
	"errors"
	"testing"
	"time"
)

// At most n holders at once; a slot closed, or held by a process that
// exits, is free again.
func TestAcquireBoundsHolders(t *testing.T) {
	dir := t.TempDir()
	a, err := Acquire(t.Context(), dir, "c", 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(t.Context(), dir, "c", 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, dir, "c", 2); !errors.Is(err, ErrFull) {
		t.Fatalf("a third holder of 2 slots: %v, want ErrFull", err)
	}
	if n, _ := Held(dir, "c", 2); n != 2 {
		t.Errorf("Held = %d, want 2", n)
	}
	a.Close()
	c, err := Acquire(t.Context(), dir, "c", 2)
	if err != nil {
		t.Fatalf("after a holder closed: %v", err)
	}
	c.Close()
	b.Close()
	if n, _ := Held(dir, "c", 2); n != 0 {
		t.Errorf("Held once every holder closed = %d, want 0", n)
	}

	// Independent names do not share slots.
	d, err := Acquire(t.Context(), dir, "other", 1)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
}
