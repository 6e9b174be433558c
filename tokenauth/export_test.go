package tokenauth

// TestHooks are functions the package calls at points where a test wants to
// change the file system under its feet. Each gets the token file's path.
type TestHooks struct {
	BeforeLink   func(path string) // Create: temporary file written, not yet linked
	AfterPublish func(path string) // Create: linked and synced, not yet re-verified
	AfterRead    func(path string) // Authenticate: file read, not yet looked at again
}

// SetTestHooks installs h and returns a function that removes it. Tests that
// use it must not run in parallel.
func SetTestHooks(h TestHooks) (restore func()) {
	testHookBeforeLink, testHookAfterPublish, testHookAfterRead = h.BeforeLink, h.AfterPublish, h.AfterRead
	return func() { testHookBeforeLink, testHookAfterPublish, testHookAfterRead = nil, nil, nil }
}
