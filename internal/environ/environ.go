// Package environ reads an environment in [os.Environ] form ("KEY=value"
// entries): the one lookup the token check, the configuration loader and
// the host share, so a process and the environment handed to it are read
// by the same rule.
package environ

import "strings"

// Lookup returns the value of the first entry of env named key and
// whether there is one, as [os.LookupEnv] does on Linux. An entry set to
// the empty string is present. An empty key is never present.
func Lookup(env []string, key string) (string, bool) {
	if key == "" {
		return "", false
	}
	for _, kv := range env {
		if name, value, ok := strings.Cut(kv, "="); ok && name == key {
			return value, true
		}
	}
	return "", false
}
