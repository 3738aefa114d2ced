package web_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/web"
)

// TestPages: the landing page, the console and the explorer are served
// with their content types and a Content-Security-Policy that names no
// other host, and the HTML refers to nothing outside the server.
func TestPages(t *testing.T) {
	f := newFixtureWith(t, &web.Options{Version: "v1.2.3-test", StorePath: "/data/lore <test>"})
	for _, c := range []struct{ path, contentType string }{
		{"/", "text/html; charset=utf-8"},
		{"/console/", "text/html; charset=utf-8"},
		{"/console/graphiql.js", "text/javascript; charset=utf-8"},
		{"/console/graphiql.css", "text/css; charset=utf-8"},
		{"/console/editor.worker.js", "text/javascript; charset=utf-8"},
		{"/console/json.worker.js", "text/javascript; charset=utf-8"},
		{"/console/graphql.worker.js", "text/javascript; charset=utf-8"},
		{"/explore/", "text/html; charset=utf-8"},
		{"/explore/explore.js", "text/javascript; charset=utf-8"},
		{"/explore/explore.css", "text/css; charset=utf-8"},
		{"/assets/site.css", "text/css; charset=utf-8"},
		{"/assets/favicon.svg", "image/svg+xml"},
	} {
		resp, body := f.get(t, c.path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.contentType || len(body) == 0 {
			t.Errorf("%s: %d %q, %d bytes; want 200 %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body), c.contentType)
			continue
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.HasPrefix(csp, "default-src ") || strings.Contains(csp, "http") || strings.Contains(csp, "*") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: Content-Security-Policy %q", c.path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", c.path)
		}
		if strings.HasPrefix(c.contentType, "text/html") {
			checkLocalRefs(t, c.path, body)
		}
	}
	for _, p := range []string{"/console/nope.js", "/assets/", "/explore/../web.go", "/console/manifest.json", "/manifest.json"} {
		if resp, _ := f.get(t, p); resp.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", p, resp.StatusCode)
		}
	}
	_, body := f.get(t, "/")
	for _, want := range []string{"v1.2.3-test", "/data/lore &lt;test&gt;", "101 nodes, 282 edges", f.url + "/mcp", "<code>search_nodes</code>", `&#34;mcpServers&#34;`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("landing page lacks %q", want)
		}
	}
	if bytes.Contains(body, []byte("{{")) {
		t.Errorf("landing page has an unfilled placeholder")
	}

	// With tokens, the page says so and the snippet sends one; the data
	// is private, so the page shows neither where the store lives nor what
	// it holds.
	f = newFixtureWith(t, &web.Options{StorePath: "/data/secret-place", HTTP: mcp.HTTPOptions{
		Tokens: []mcp.Token{{Name: "ci", Scope: mcp.ScopeRead, Secret: "0123456789abcdef0123"}}}})
	resp, body := f.get(t, "/")
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("asks for a bearer token")) || !bytes.Contains(body, []byte("Bearer ${LORE_TOKEN}")) ||
		!bytes.Contains(body, []byte("unknown")) || bytes.Contains(body, []byte("{{")) {
		t.Errorf("landing page with tokens: %d\n%s", resp.StatusCode, body)
	}
	for _, leak := range []string{"secret-place", "nodes,", "edges,", `id="store"`} {
		if bytes.Contains(body, []byte(leak)) {
			t.Errorf("landing page with tokens shows %q", leak)
		}
	}
}

var refRE = regexp.MustCompile(`(?i)\s(?:src|href|action)="([^"]*)"`)

// checkLocalRefs fails for a link or resource on another host; only links
// a person follows (<a href>) may leave the server, and those only in the
// landing page's prose, which has none.
func checkLocalRefs(t *testing.T, page string, html []byte) {
	t.Helper()
	for _, m := range refRE.FindAllSubmatch(html, -1) {
		ref := string(m[1])
		if strings.Contains(ref, "//") || strings.Contains(ref, ":") {
			t.Errorf("%s refers to %q, outside the server", page, ref)
		}
	}
	if bytes.Contains(html, []byte("<script>")) || bytes.Contains(html, []byte(" style=")) || bytes.Contains(html, []byte("<style")) {
		t.Errorf("%s has inline script or style, which its policy forbids", page)
	}
}

// TestPagesCaching: gzip when asked for, the same bytes once inflated, and
// 304 for a matching ETag.
func TestPagesCaching(t *testing.T) {
	f := newFixture(t)
	_, plain := f.get(t, "/console/graphiql.js")
	req, _ := http.NewRequest("GET", f.url+"/console/graphiql.js", nil)
	req.Header.Set("Accept-Encoding", "br;q=1.0, gzip;q=0.8")
	resp, err := http.DefaultTransport.RoundTrip(req) // the client would inflate it itself
	if err != nil {
		t.Fatal(err)
	}
	zipped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || len(zipped) >= len(plain)/2 {
		t.Fatalf("Content-Encoding %q, %d of %d bytes", resp.Header.Get("Content-Encoding"), len(zipped), len(plain))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		t.Fatal(err)
	}
	if inflated, _ := io.ReadAll(zr); !bytes.Equal(inflated, plain) {
		t.Errorf("the gzip form inflates to other bytes")
	}
	gzETag := resp.Header.Get("ETag")
	for _, ae := range []string{"", "gzip;q=0", "identity"} {
		req.Header.Set("Accept-Encoding", ae)
		resp, err = http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("Accept-Encoding %q: got Content-Encoding %q", ae, resp.Header.Get("Content-Encoding"))
		}
	}
	if resp.Header.Get("ETag") == gzETag {
		t.Errorf("the plain and gzip forms share the ETag %s", gzETag)
	}
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", resp.StatusCode)
	}
}

// manifest is console/dist/manifest.json, which build.mjs writes.
type manifest struct {
	Sources map[string]string `json:"sources"`
	Outputs map[string]struct {
		Size   int    `json:"size"`
		SHA256 string `json:"sha256"`
	} `json:"outputs"`
}

// TestBundleMatchesSources: the committed bundle was built from the
// committed sources and lockfile, and nobody edited it since. `make
// check-web` goes further and rebuilds it; this needs no Node.
func TestBundleMatchesSources(t *testing.T) {
	const root = "console"
	var m manifest
	data, err := os.ReadFile(filepath.Join(root, "dist", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	sources := []string{"build.mjs", "package.json", "package-lock.json"}
	err = filepath.WalkDir(filepath.Join(root, "src"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			sources = append(sources, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sources {
		if sum := fileSum(t, filepath.Join(root, s)); m.Sources[s] != sum {
			t.Errorf("%s changed since the bundle was built; run make web", s)
		}
	}
	for s := range m.Sources {
		if !slices.Contains(sources, s) {
			t.Errorf("the bundle was built with %s, which is gone; run make web", s)
		}
	}
	var outputs []string
	dist := filepath.Join(root, "dist")
	err = filepath.WalkDir(dist, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "manifest.json" {
			rel, _ := filepath.Rel(dist, p)
			outputs = append(outputs, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outputs {
		if want, ok := m.Outputs[o]; !ok || fileSum(t, filepath.Join(dist, o)) != want.SHA256 {
			t.Errorf("dist/%s is not what the build wrote; run make web", o)
		}
	}
	if len(outputs) != len(m.Outputs) {
		t.Errorf("dist has %d files, the build wrote %d; run make web", len(outputs), len(m.Outputs))
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
