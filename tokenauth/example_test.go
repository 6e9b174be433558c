package tokenauth_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/tokenauth"
)

func Example() {
	home, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(home)
	path := tokenauth.Path(filepath.Join(home, ".openprogram"))

	token, err := tokenauth.Create(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = tokenauth.Create(path)
	fmt.Println("second create:", errors.Is(err, tokenauth.ErrExists))

	clientID, err := tokenauth.Authenticate([]string{tokenauth.EnvVar + "=" + token}, path)
	fmt.Println("authenticated:", err == nil, clientID == tokenauth.Fingerprint(token))

	_, err = tokenauth.Authenticate([]string{tokenauth.EnvVar + "=not-the-token"}, path)
	fmt.Println("wrong token:", errors.Is(err, tokenauth.ErrAuthFailed))
	// Output:
	// second create: true
	// authenticated: true true
	// wrong token: true
}

func ExampleFingerprint() {
	fmt.Println(tokenauth.Fingerprint("abc"))
	// Output: ba7816bf8f01cfea
}
