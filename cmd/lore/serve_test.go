package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lore-dev/lore/mcp"
)

// TestTokensFilePermissions: a tokens file that others than its owner may
// read or change is refused, with the command that fixes it; an
// owner-only one is read.
func TestTokensFilePermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("ci read 0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if toks, err := readTokens(path); err != nil || len(toks) != 1 {
		t.Fatalf("owner-only file: %v %v", toks, err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o660} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := readTokens(path)
		if err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	// Through the command: serve refuses to start.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a server that starts would run until killed
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, loreBin, "serve", "--store", t.TempDir(), "--addr", "127.0.0.1:0", "--tokens", path)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || ctx.Err() != nil || !strings.Contains(stderr.String(), "chmod 600") {
		t.Errorf("serve with a world-readable tokens file: %v: %s", err, stderr.String())
	}
}

// FuzzTokensFile reads any tokens file: no panic, and whatever it accepts
// is well formed: scopes read or write, secrets of 16 characters or more
// without spaces, names unique.
func FuzzTokensFile(f *testing.F) {
	for _, s := range []string{"ci read 0123456789abcdef0123\n", "# comment\n\nci write 0123456789abcdef0123\nbot read abcdefabcdefabcdef\n",
		"ci read short\n", "ci admin 0123456789abcdef0123\n", "a b\n", "ci read 0123456789abcdef0123\nci read 0123456789abcdef0124\n",
		"\xff\xfe read 0123456789abcdef0123", strings.Repeat("x", 70000), "ci\tread\t0123456789abcdef0123\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		toks, err := parseTokens(strings.NewReader(string(data)), "tokens")
		if err != nil {
			if toks != nil {
				t.Fatalf("tokens with an error: %v", toks)
			}
			return
		}
		var names []string
		for _, tk := range toks {
			if tk.Scope != mcp.ScopeRead && tk.Scope != mcp.ScopeWrite || len(tk.Secret) < 16 || strings.ContainsAny(tk.Secret, " \t\n") || tk.Name == "" {
				t.Fatalf("accepted %+v", tk)
			}
			if slices.Contains(names, tk.Name) {
				t.Fatalf("name %s twice", tk.Name)
			}
			names = append(names, tk.Name)
		}
	})
}
