package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestOpenPicksBackendByScheme(t *testing.T) {
	var gotURL string
	var gotOpts *Options
	sentinel := errors.New("fake backend called")
	Register("fake-open-test", func(_ context.Context, url string, opts *Options) (Store, error) {
		gotURL, gotOpts = url, opts
		return nil, sentinel
	})
	opts := &Options{AuditKey: make([]byte, 32)}
	if _, err := OpenWith(context.Background(), "fake-open-test:/x.db", opts); !errors.Is(err, sentinel) || gotOpts != opts {
		t.Errorf("OpenWith error = %v, backend got options %p; want the backend's error and options %p", err, gotOpts, opts)
	}
	for _, url := range []string{"fake-open-test:/x.db", "FAKE-OPEN-TEST://host/db"} {
		if _, err := Open(context.Background(), url); !errors.Is(err, sentinel) {
			t.Errorf("Open(%q) error = %v, want the backend's", url, err)
		}
		if gotURL != url {
			t.Errorf("backend got url %q, want %q unchanged", gotURL, url)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"", "no scheme"},
		{"/var/lib/openprogram.db", "no scheme"},
		{"nosuch://u:secret@host/db", `no backend registered for scheme "nosuch"`},
	} {
		_, err := Open(context.Background(), tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) error = %v, want it to say %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error %q leaks the password", tc.url, err)
		}
	}
}

func TestRegisterPanics(t *testing.T) {
	open := func(context.Context, string, *Options) (Store, error) { return nil, nil }
	Register("fake-dup-test", open)
	for name, fn := range map[string]func(){
		"duplicate": func() { Register("FAKE-DUP-TEST", open) },
		"nil":       func() { Register("fake-nil-test", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%s) did not panic", name)
				}
			}()
			fn()
		}()
	}
	found := false
	for _, s := range Schemes() {
		found = found || s == "fake-dup-test"
	}
	if !found {
		t.Errorf("Schemes() = %v, want it to list fake-dup-test", Schemes())
	}
}
