//go:build unix

package tokenauth_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/openprogram/openprogram/tokenauth"
)

const (
	helperEnv     = "TOKENAUTH_TEST_HELPER"
	helperPathEnv = "TOKENAUTH_TEST_HELPER_PATH"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "create" {
		os.Exit(createHelper(os.Getenv(helperPathEnv)))
	}
	os.Exit(m.Run())
}

// createHelper is the child side of TestCreateRaceProcesses: it says it is
// ready, waits for stdin to close, calls Create once and reports the result
// on stdout.
func createHelper(path string) int {
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		fmt.Printf("fail reading stdin: %v\n", err)
		return 0
	}
	token, err := tokenauth.Create(path)
	switch {
	case err == nil:
		fmt.Printf("ok %s\n", token)
	case isOnly(err, tokenauth.ErrExists):
		fmt.Printf("exists %s\n", err)
	default:
		fmt.Printf("fail %s\n", err)
	}
	return 0
}

func isOnly(err, want error) bool {
	n := 0
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			n++
		}
	}
	return n == 1 && errors.Is(err, want)
}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// checkTokenFile checks the token file at path holds exactly token under
// the file rules.
func checkTokenFile(t *testing.T, path, token string) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatalf("lstat %q: %v", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Errorf("%q has type %#o, want a regular file", path, st.Mode&syscall.S_IFMT)
	}
	if got := st.Mode & 0o7777; got != 0o600 {
		t.Errorf("%q has mode %04o, want 0600", path, got)
	}
	if int(st.Uid) != os.Geteuid() {
		t.Errorf("%q is owned by uid %d, want %d", path, st.Uid, os.Geteuid())
	}
	if got := string(readFile(t, path)); got != token {
		t.Errorf("%q holds %q, want the token %q", path, got, token)
	}
}

func TestCreate(t *testing.T) {
	root := privateDir(t)
	state := filepath.Join(root, "state")
	path := tokenauth.Path(state)

	token, err := tokenauth.Create(path)
	if err != nil {
		t.Fatalf("Create(%q) = %v", path, err)
	}
	if !tokenRE.MatchString(token) {
		t.Errorf("token %q does not match %s", token, tokenRE)
	}
	if len(token) != 43 {
		t.Errorf("len(token) = %d, want 43", len(token))
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) != 32 {
		t.Errorf("token decodes to %d bytes, %v; want 32 bytes of unpadded base64url", len(raw), err)
	}
	checkTokenFile(t, path, token)
	if strings.ContainsAny(string(readFile(t, path)), "\r\n \t") {
		t.Errorf("token file holds whitespace")
	}
	stringsEqual(t, "entries of the state directory", listDir(t, state), []string{tokenauth.FileName})

	id, err := authenticate(t, env(token), path)
	if err != nil {
		t.Fatalf("Authenticate after Create = %v", err)
	}
	if want := tokenauth.Fingerprint(token); id != want {
		t.Errorf("Authenticate = %q, want Fingerprint(token) = %q", id, want)
	}
}

func TestCreateMakesDifferentTokens(t *testing.T) {
	seen := map[string]bool{}
	for i := range 16 {
		token, err := tokenauth.Create(tokenPath(filepath.Join(privateDir(t), fmt.Sprint(i))))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if seen[token] {
			t.Fatalf("Create returned the same token twice")
		}
		seen[token] = true
	}
}

func TestCreateRelativePath(t *testing.T) {
	dir := privateDir(t)
	t.Chdir(dir)
	token, err := tokenauth.Create(filepath.Join("state", tokenauth.FileName))
	if err != nil {
		t.Fatalf("Create(relative) = %v", err)
	}
	checkTokenFile(t, filepath.Join(dir, "state", tokenauth.FileName), token)
}

// TestCreateParents checks that missing directories are made 0700, whatever
// the umask, and that the file is 0600.
func TestCreateParents(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o077, 0o277} {
		t.Run(fmt.Sprintf("umask%04o", umask), func(t *testing.T) {
			root := privateDir(t)
			old := syscall.Umask(umask)
			defer syscall.Umask(old)

			path := tokenPath(filepath.Join(root, "a", "b", "c"))
			token, err := tokenauth.Create(path)
			syscall.Umask(old)
			if err != nil {
				t.Fatalf("Create(%q) = %v", path, err)
			}
			for _, d := range []string{"a", "a/b", "a/b/c"} {
				var st syscall.Stat_t
				if err := syscall.Lstat(filepath.Join(root, d), &st); err != nil {
					t.Fatalf("lstat: %v", err)
				}
				if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Mode&0o7777 != 0o700 {
					t.Errorf("%s has mode %#o, want a directory with mode 0700", d, st.Mode)
				}
			}
			checkTokenFile(t, path, token)
		})
	}
}

// TestCreateExistingParentUnderSharedAncestor: ancestors may be shared (like
// /tmp, 1777) as long as they are real directories.
func TestCreateExistingParentUnderSharedAncestor(t *testing.T) {
	root := privateDir(t)
	shared := filepath.Join(root, "shared")
	mkdir(t, shared, 0o1777)
	path := tokenPath(filepath.Join(shared, "state"))
	token, err := tokenauth.Create(path)
	if err != nil {
		t.Fatalf("Create(%q) = %v", path, err)
	}
	checkTokenFile(t, path, token)
}

func TestCreateRefusesExisting(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"file", func(t *testing.T, path string) { writeFile(t, path, []byte("keep me\n"), 0o644) }},
		{"token file", func(t *testing.T, path string) { writeFile(t, path, []byte(randomToken(t)), 0o600) }},
		{"empty file", func(t *testing.T, path string) { writeFile(t, path, nil, 0o600) }},
		{"symlink to file", func(t *testing.T, path string) {
			target := path + ".target"
			writeFile(t, target, []byte("target"), 0o600)
			symlink(t, target, path)
		}},
		{"dangling symlink", func(t *testing.T, path string) { symlink(t, path+".missing", path) }},
		{"directory", func(t *testing.T, path string) { mkdir(t, path, 0o700) }},
		{"fifo", func(t *testing.T, path string) { mkfifo(t, path) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := privateDir(t)
			path := tokenPath(dir)
			tt.setup(t, path)
			before := stateOf(t, path)
			entries := listDir(t, dir)

			token, err := tokenauth.Create(path)
			if token != "" {
				t.Errorf("Create returned a token %q with an error", token)
			}
			wantErr(t, err, tokenauth.ErrExists)
			checkUnchanged(t, path, before)
			stringsEqual(t, "entries after Create", listDir(t, dir), entries)
		})
	}
}

func TestCreateRejects(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the path to pass to Create and the directory
		// that must stay as it was.
		setup func(t *testing.T, root string) (path, watch string)
	}{
		{"symlinked parent", func(t *testing.T, root string) (string, string) {
			real := filepath.Join(root, "real")
			mkdir(t, real, 0o700)
			symlink(t, real, filepath.Join(root, "link"))
			return tokenPath(filepath.Join(root, "link")), real
		}},
		{"symlinked ancestor", func(t *testing.T, root string) (string, string) {
			real := filepath.Join(root, "real")
			mkdir(t, real, 0o700)
			mkdir(t, filepath.Join(real, "state"), 0o700)
			symlink(t, real, filepath.Join(root, "link"))
			return tokenPath(filepath.Join(root, "link", "state")), filepath.Join(real, "state")
		}},
		{"relative symlinked parent", func(t *testing.T, root string) (string, string) {
			mkdir(t, filepath.Join(root, "real"), 0o700)
			symlink(t, "real", filepath.Join(root, "link"))
			return tokenPath(filepath.Join(root, "link")), filepath.Join(root, "real")
		}},
		{"dangling symlinked parent", func(t *testing.T, root string) (string, string) {
			symlink(t, filepath.Join(root, "missing"), filepath.Join(root, "link"))
			return tokenPath(filepath.Join(root, "link", "state")), root
		}},
		{"group-writable parent", func(t *testing.T, root string) (string, string) {
			dir := filepath.Join(root, "state")
			mkdir(t, dir, 0o770)
			return tokenPath(dir), dir
		}},
		{"group-readable parent", func(t *testing.T, root string) (string, string) {
			dir := filepath.Join(root, "state")
			mkdir(t, dir, 0o750)
			return tokenPath(dir), dir
		}},
		{"other-executable parent", func(t *testing.T, root string) (string, string) {
			dir := filepath.Join(root, "state")
			mkdir(t, dir, 0o701)
			return tokenPath(dir), dir
		}},
		{"parent is a file", func(t *testing.T, root string) (string, string) {
			file := filepath.Join(root, "state")
			writeFile(t, file, []byte("x"), 0o600)
			return tokenPath(file), root
		}},
		{"parent owned by another user", func(t *testing.T, root string) (string, string) {
			dir := filepath.Join(root, "state")
			mkdir(t, dir, 0o700)
			chownOther(t, dir)
			return tokenPath(dir), dir
		}},
		{"empty path", func(t *testing.T, root string) (string, string) { return "", root }},
		{"root directory", func(t *testing.T, root string) (string, string) { return "/", root }},
		{"nul byte", func(t *testing.T, root string) (string, string) { return tokenPath(root) + "\x00", root }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := privateDir(t)
			path, watch := tt.setup(t, root)
			before := listDir(t, watch)

			token, err := tokenauth.Create(path)
			if token != "" {
				t.Errorf("Create returned a token %q with an error", token)
			}
			wantErr(t, err, tokenauth.ErrCreate)
			stringsEqual(t, "entries of "+watch, listDir(t, watch), before)
			if _, err := os.Lstat(filepath.Join(root, "missing")); err == nil {
				t.Errorf("Create made the target of a dangling symlink")
			}
		})
	}
}

// TestCreateRaceGoroutines: of many goroutines racing on one path, exactly
// one gets a token and the file holds it; everyone else gets ErrExists.
func TestCreateRaceGoroutines(t *testing.T) {
	const n = 32
	dir := filepath.Join(privateDir(t), "state")
	path := tokenPath(dir)

	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		tokens  [n]string
		errs    [n]error
		winners []string
	)
	for i := range n {
		wg.Go(func() {
			<-start
			tokens[i], errs[i] = tokenauth.Create(path)
		})
	}
	close(start)
	wg.Wait()

	for i := range n {
		if errs[i] == nil {
			winners = append(winners, tokens[i])
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d callers got a token, want exactly 1 (errors: %v)", len(winners), errs)
	}
	for i := range n {
		if errs[i] != nil {
			wantErr(t, errs[i], tokenauth.ErrExists, winners[0])
			if tokens[i] != "" {
				t.Errorf("loser %d got token %q", i, tokens[i])
			}
		}
	}
	checkTokenFile(t, path, winners[0])
	stringsEqual(t, "entries after the race", listDir(t, dir), []string{tokenauth.FileName})
}

// TestCreateRaceProcesses is TestCreateRaceGoroutines across processes: the
// test binary runs itself as helpers (see TestMain) that all wait for their
// stdin to close and then call Create on the same path.
func TestCreateRaceProcesses(t *testing.T) {
	const n = 8
	dir := filepath.Join(privateDir(t), "state")
	path := tokenPath(dir)

	type helper struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr bytes.Buffer
	}
	helpers := make([]*helper, n)
	for i := range helpers {
		h := &helper{cmd: exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")}
		h.cmd.Env = append(os.Environ(), helperEnv+"=create", helperPathEnv+"="+path)
		h.cmd.Stderr = &h.stderr
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := h.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		h.stdout = bufio.NewReader(out)
		if err := h.cmd.Start(); err != nil {
			t.Fatalf("start helper: %v", err)
		}
		helpers[i] = h
	}
	for i, h := range helpers {
		if line, err := h.stdout.ReadString('\n'); line != "ready\n" {
			t.Fatalf("helper %d said %q, %v; want ready", i, line, err)
		}
	}
	for _, h := range helpers {
		h.stdin.Close()
	}

	var winners []string
	var lines []string
	for i, h := range helpers {
		out, err := io.ReadAll(h.stdout)
		if err != nil {
			t.Fatalf("read helper %d: %v", i, err)
		}
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v (stderr %q)", i, err, h.stderr.String())
		}
		if h.stderr.Len() != 0 {
			t.Errorf("helper %d wrote to stderr: %q", i, h.stderr.String())
		}
		line := strings.TrimSuffix(string(out), "\n")
		lines = append(lines, line)
		switch kind, rest, _ := strings.Cut(line, " "); kind {
		case "ok":
			winners = append(winners, rest)
		case "exists":
		default:
			t.Errorf("helper %d: %q", i, line)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d processes got a token, want exactly 1: %q", len(winners), lines)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "ok ") {
			checkNoSecret(t, line, winners[0])
		}
	}
	checkTokenFile(t, path, winners[0])
	stringsEqual(t, "entries after the race", listDir(t, dir), []string{tokenauth.FileName})
}

// TestCreateVerifiesAfterPublishing tampers with the file between link and
// re-verification: Create must fail and remove its own file, but never a
// file someone else put there.
func TestCreateVerifiesAfterPublishing(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string)
		// kept: whether a file must still be at the path afterwards.
		kept bool
	}{
		{"mode changed", func(t *testing.T, path string) { chmod(t, path, 0o644) }, false},
		{"setuid bit added", func(t *testing.T, path string) { chmod(t, path, 0o4600) }, false},
		{"owner changed", func(t *testing.T, path string) {
			if err := os.Lchown(path, 65534, 65534); err != nil {
				t.Errorf("chown: %v", err)
			}
		}, false},
		{"grown", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("\n"); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"replaced", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, []byte("someone else's file"), 0o600)
		}, true},
		{"removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "owner changed" && os.Geteuid() != 0 {
				t.Skipf("needs root to give the file to another user; running as uid %d", os.Geteuid())
			}
			dir := privateDir(t)
			path := tokenPath(dir)
			var published string
			var other fileState
			restore := tokenauth.SetTestHooks(tokenauth.TestHooks{AfterPublish: func(p string) {
				if p != path {
					t.Errorf("hook got path %q, want %q", p, path)
				}
				published = string(readFile(t, p))
				tt.tamper(t, p)
				other = stateOf(t, p)
			}})
			defer restore()

			token, err := tokenauth.Create(path)
			if token != "" {
				t.Errorf("Create returned token %q although verification failed", token)
			}
			if !tokenRE.MatchString(published) {
				t.Fatalf("hook saw %q, want the published token", published)
			}
			wantErr(t, err, tokenauth.ErrCreate, published)
			if tt.kept {
				checkUnchanged(t, path, other)
				stringsEqual(t, "entries", listDir(t, dir), []string{tokenauth.FileName})
			} else {
				stringsEqual(t, "entries", listDir(t, dir), nil)
			}
		})
	}
}

// TestCreateLinkRefusesLateArrival puts a file at the path after Create's
// first look and before it links: the link must fail, leaving that file
// untouched and no temporary file behind.
func TestCreateLinkRefusesLateArrival(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"file", func(t *testing.T, path string) { writeFile(t, path, []byte("late"), 0o644) }},
		{"dangling symlink", func(t *testing.T, path string) { symlink(t, path+".missing", path) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := privateDir(t)
			path := tokenPath(dir)
			var temp string
			var late fileState
			restore := tokenauth.SetTestHooks(tokenauth.TestHooks{BeforeLink: func(p string) {
				names := listDir(t, dir)
				if len(names) != 1 {
					t.Fatalf("before link the directory holds %q, want one temporary file", names)
				}
				temp = string(readFile(t, filepath.Join(dir, names[0])))
				tt.setup(t, p)
				late = stateOf(t, p)
			}})
			defer restore()

			token, err := tokenauth.Create(path)
			if token != "" {
				t.Errorf("Create returned token %q although the path was taken", token)
			}
			if !tokenRE.MatchString(temp) {
				t.Fatalf("temporary file held %q, want a token", temp)
			}
			wantErr(t, err, tokenauth.ErrExists, temp)
			checkUnchanged(t, path, late)
			stringsEqual(t, "entries", listDir(t, dir), []string{tokenauth.FileName})
		})
	}
}
