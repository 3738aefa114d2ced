package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// The browser pages: GraphiQL at /console/, the explorer at /explore/, and
// what they share with the landing page at /assets/. `make web` builds them
// from web/console/src into web/console/dist with npm and esbuild; the
// result is committed, so building Lore needs no Node.
//
//go:embed console/dist
var dist embed.FS

// Content-Security-Policy per folder. Nothing may come from another host:
// 'self' in connect-src also covers WebSockets to the page's own host and
// port (CSP Level 3), which the subscriptions use. GraphiQL's editor
// (Monaco) sets inline styles and loads its fonts as data: URLs; the
// explorer and the landing page need neither.
const (
	cspConsole = "default-src 'self'; script-src 'self'; worker-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"font-src 'self' data:; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
		"form-action 'none'; frame-ancestors 'none'"
	cspExplore = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	cspLanding = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

var cspFor = map[string]string{"console": cspConsole, "explore": cspExplore, "assets": cspExplore}

// Content types by extension, fixed here rather than read from the
// system's mime tables, which differ between machines.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// An asset is one built file, with its gzip form made on first request.
type asset struct {
	data        []byte
	contentType string
	csp         string
	etag        string
	modTime     time.Time

	once sync.Once
	gz   []byte // nil: not worth compressing
}

// assets serves the embedded files by URL path (/console/graphiql.js); a
// path ending in / serves that folder's index.html. No folder listings.
type assets map[string]*asset

// newAssets reads the embedded build. A file with an unknown extension is
// a programmer error (manifest.json stays unserved on purpose).
func newAssets() assets {
	root, err := fs.Sub(dist, "console/dist")
	if err != nil {
		panic(err)
	}
	a := assets{}
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || name == "manifest.json" {
			return err
		}
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			panic("web: no content type for " + name)
		}
		data, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		folder, _, _ := strings.Cut(name, "/")
		a["/"+name] = &asset{data: data, contentType: ct, csp: cspFor[folder], etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return a
}

func (a assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if strings.HasSuffix(p, "/") {
		p += "index.html"
	}
	f, ok := a[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Security-Policy", f.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// The names carry no hash, so a browser asks again each time and gets
	// 304 Not Modified while the ETag holds.
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept-Encoding")
	data, etag := f.data, f.etag
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if gz := f.gzipped(); gz != nil {
			data, etag = gz, strings.TrimSuffix(etag, `"`)+`-gz"`
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, "", f.modTime, bytes.NewReader(data))
}

// gzipped compresses the file once; small files are served as they are.
func (f *asset) gzipped() []byte {
	f.once.Do(func() {
		if len(f.data) < 1024 {
			return
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(f.data)
		zw.Close()
		f.gz = b.Bytes()
	})
	return f.gz
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
