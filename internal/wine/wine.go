// Package wine tells whether the program runs under Wine rather than on
// Windows. Wine runs the Win32 API but keeps no file ACLs, and its job
// objects and consoles are partial: code that relies on those (and the tests
// that prove them) asks [Detected] and says so.
package wine
