package settings

import (
	"fmt"
	"io"
)

// What `config get`, `set`, `unset` and `list` do to a loaded Config; the
// commands load it, write it back (Save) and print.

// RefusedError is a value `config set` or `config unset` refuses: the
// file is left as it was, and the message says so. On the command line it
// is a usage mistake.
type RefusedError struct{ msg string }

func (e *RefusedError) Error() string { return e.msg }

func refused(format string, args ...any) error {
	return &RefusedError{fmt.Sprintf(format, args...) + "; config.json was not changed"}
}

// SetText sets key from the command-line VALUE text, as `config set` does:
// the text read as JSON or as a string, stored by the key's parser, then
// the whole configuration checked (the provider's settings, the rules
// across keys) and a model.script loaded as the provider will load it. A
// refusal is a [*RefusedError], after which c is not to be saved; an
// unknown key, an [*UnknownKeyError].
func (c *Config) SetText(key, text string) error {
	k, ok := LookupKey(key)
	if !ok {
		return &UnknownKeyError{key}
	}
	v, err := k.parseValue(text)
	if err != nil {
		return refused("invalid value for %s: %v", key, err)
	}
	// The key is known, so set can only refuse the value, and says so
	// with "invalid value for <key>: ".
	if err := c.set(key, v); err != nil {
		return refused("%v", err)
	}
	if err := c.checkModel(); err != nil {
		return refused("%s cannot be set: %v", key, err)
	}
	if err := c.checkAcrossKeys(); err != nil {
		return refused("%s cannot be set: %v", key, err)
	}
	// Checked when set, not when loaded: a file that goes away later is
	// reported by doctor and by the prompt that needs it.
	if key == "model.script" {
		if err := checkScript(c.Model.Script); err != nil {
			return refused("invalid value for model.script: %v", err)
		}
	}
	return nil
}

// Unset removes key, as `config unset` does: it reads as its default
// again. It reports whether config.json set the key (when not, nothing
// changed). A default the rules across keys refuse is a [*RefusedError];
// an unknown key, an [*UnknownKeyError].
func (c *Config) Unset(key string) (bool, error) {
	if _, set, err := c.Get(key); err != nil || !set {
		return false, err
	}
	if err := c.unset(key); err != nil {
		return false, err
	}
	if err := c.checkAcrossKeys(); err != nil {
		return false, refused("%s cannot be unset: %v", key, err)
	}
	return true, nil
}

// Text is key's value as `config get` prints it: JSON, or with raw a
// string as it is; secrets hidden unless showSecrets. An unknown key is an
// [*UnknownKeyError].
func (c *Config) Text(key string, raw, showSecrets bool) (string, error) {
	v, _, err := c.Get(key)
	if err != nil {
		return "", err
	}
	if !showSecrets {
		v = redact(key, v)
	}
	if s, ok := v.(string); ok && raw {
		return s, nil
	}
	return Encode(v), nil
}

// List writes every key to w as `config list` prints it, in table order:
// its value (secrets hidden unless showSecrets), whether it is set or the
// default, and what it is for.
func (c *Config) List(w io.Writer, showSecrets bool) error {
	for _, k := range keys {
		v, set, _ := c.Get(k.Name)
		if !showSecrets {
			v = redact(k.Name, v)
		}
		origin := "default"
		if set {
			origin = "set"
		}
		if _, err := fmt.Fprintf(w, "%s = %s (%s)\n    %s\n", k.Name, Encode(v), origin, k.Help); err != nil {
			return err
		}
	}
	return nil
}
