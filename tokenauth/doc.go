// Package tokenauth creates and checks the MCP server token: the shared
// secret that lets a local MCP client start `openprogram mcp serve`.
//
// One side creates the token once; the client passes it back in the
// environment; the server checks it before reading a byte of the protocol:
//
//	path := tokenauth.Path(stateDir)
//
//	// openprogram mcp token create
//	token, err := tokenauth.Create(path)
//	switch {
//	case errors.Is(err, tokenauth.ErrExists):
//		// Error: MCP server token already exists
//	case err != nil:
//		// Error: could not create MCP server token
//	}
//	fmt.Println(token) // the only place the token is ever shown
//
//	// openprogram mcp serve
//	clientID, err := tokenauth.Authenticate(os.Environ(), path)
//	if err != nil {
//		// Error: MCP server authentication failed
//		return err
//	}
//	// clientID is 16 lowercase hex characters, the client's only identity.
//
// # Files
//
// The token lives in a regular file named [FileName] in the state directory,
// with mode exactly 0600 and owned by the current user, in a directory that
// belongs to the current user and grants nothing to group or others. No
// component of its path may be a symlink. [Create] never replaces anything;
// [Authenticate] never creates or changes anything.
//
// # Errors
//
// Every error wraps one of [ErrExists], [ErrCreate], [ErrUnavailable],
// [ErrEnvRequired] or [ErrAuthFailed], and may carry a cause that names the
// path and what was wrong with it. Errors never contain the token or any part
// of it. The package writes nothing to stdout, stderr or any log.
//
// # Identity
//
// [Fingerprint] turns a token into a client identity: the first 16 hex
// characters of its SHA-256. [Authenticate] returns the fingerprint of the
// stored token, never the token.
package tokenauth
