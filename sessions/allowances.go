package sessions

import (
	"errors"
	"fmt"
)

// MaxAllowedToolLen bounds the tool name of a standing approval, as the
// gate bounds tool names.
const MaxAllowedToolLen = 128

// ErrInvalidAllowance: a standing approval names no tool, a tool name
// longer than [MaxAllowedToolLen] bytes, or one holding U+0000. Nothing
// was written.
var ErrInvalidAllowance = errors.New("sessions: invalid standing approval")

// CheckAllowance checks the tool of a standing approval
// ([Store.AllowForSession]) the same way for every backend.
func CheckAllowance(tool string) error {
	switch {
	case tool == "":
		return fmt.Errorf("%w: no tool named", ErrInvalidAllowance)
	case len(tool) > MaxAllowedToolLen:
		return fmt.Errorf("%w: tool name of %d bytes, at most %d", ErrInvalidAllowance, len(tool), MaxAllowedToolLen)
	case HasNUL(tool):
		return fmt.Errorf("%w: tool name holds U+0000", ErrInvalidAllowance)
	}
	return nil
}
