//go:build windows

package wine

import (
	"sync"

	"golang.org/x/sys/windows"
)

// Detected reports whether the program runs under Wine: Wine's ntdll
// exports wine_get_version, Windows' does not.
var Detected = sync.OnceValue(func() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
})
