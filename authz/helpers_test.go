package authz_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// diff returns "" when got and want are deeply equal, else a readable description.
// (The module keeps zero requirements, so no go-cmp.)
func diff(got, want any) string {
	if reflect.DeepEqual(got, want) {
		return ""
	}
	return fmt.Sprintf("\n got: %#v\nwant: %#v", got, want)
}

func mustContain(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s = %q, want it to contain %q", what, s, sub)
	}
}
