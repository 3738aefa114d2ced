package web_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
	"github.com/lore-dev/lore/web"
)

// fixture is a running server over a store holding the example dataset.
type fixture struct {
	url string
	srv *mcp.Server
	cat *mcp.Catalog
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, nil) }

// newFixtureWith is newFixture with handler options.
func newFixtureWith(t *testing.T, opts *web.Options) *fixture {
	t.Helper()
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	cat := mcp.NewCatalog(s, nil)
	srv := mcp.NewServer(cat, nil)
	hs := httptest.NewServer(web.NewHandler(srv, opts))
	t.Cleanup(hs.Close)
	return &fixture{url: hs.URL, srv: srv, cat: cat}
}

func (f *fixture) get(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(f.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestServesWhatTheGeneratorWrote: the running server serves exactly the
// generator's output.
func TestServesWhatTheGeneratorWrote(t *testing.T) {
	f := newFixture(t)
	files, err := gen.Files(gen.Default())
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[string][]byte{}
	for _, file := range files {
		rendered[file.Path] = file.Data
	}
	for path, file := range map[string]string{
		"/openapi.json":                "gen/openapi.json",
		"/llms.txt":                    "llms.txt",
		"/.well-known/llms.txt":        "llms.txt",
		"/schema.graphqls":             "gen/gql/schema.graphqls",
		"/.well-known/mcp/server-card": "gen/server-card.json",
		"/.well-known/mcp.json":        "gen/server-card.json",
	} {
		resp, body := f.get(t, path)
		if resp.StatusCode != 200 || !bytes.Equal(body, rendered[file]) {
			t.Errorf("%s: status %d, body differs from the rendered %s", path, resp.StatusCode, file)
		}
	}
	// llms-full.txt is the rendered file plus the live model.
	_, body := f.get(t, "/llms-full.txt")
	if !bytes.HasPrefix(body, rendered["gen/llms-full.txt"]) || !bytes.Contains(body, []byte("- `Service`")) || !bytes.Contains(body, []byte("- `dependsOn` (Service → Service)")) {
		t.Errorf("llms-full.txt does not end with the live model")
	}
}

var linkRE = regexp.MustCompile(`^- \[([^\]]+)\]\(([^)\s]+)\)(: .+)?$`)

// TestLLMsTxt parses llms.txt by the llmstxt.org structure (an H1, a
// blockquote summary, free text, then H2 sections of link lists) and
// follows every link on the running server.
func TestLLMsTxt(t *testing.T) {
	f := newFixture(t)
	_, body := f.get(t, "/llms.txt")
	sc := bufio.NewScanner(bytes.NewReader(body))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 3 || lines[0] != "# Lore" || lines[1] != "" || !strings.HasPrefix(lines[2], "> ") {
		t.Fatalf("want an H1 then a blockquote summary, got %q", lines[:min(3, len(lines))])
	}
	var sections []string
	links := 0
	for i, l := range lines[3:] {
		switch {
		case strings.HasPrefix(l, "# "):
			t.Errorf("line %d: a second H1", i+4)
		case strings.HasPrefix(l, "## "):
			sections = append(sections, l[3:])
		case len(sections) > 0 && l != "":
			m := linkRE.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("line %d in section %s is not a link item: %q", i+4, sections[len(sections)-1], l)
				continue
			}
			links++
			resp, _ := f.get(t, m[2])
			if resp.StatusCode != 200 {
				t.Errorf("link %s (%s): status %d", m[1], m[2], resp.StatusCode)
			}
		}
	}
	if strings.Join(sections, ",") != "Tools,Resources,API descriptions,Optional" {
		t.Errorf("sections %v", sections)
	}
	if want := len(f.cat.Tools()) + len(mcp.Resources()) + 4; links != want {
		t.Errorf("%d links, want %d (every tool, every resource, 3 API documents, llms-full.txt)", links, want)
	}
}

// TestEndpointsAreServed: every endpoint lore serve logs at startup is a
// route of the handler; the pages and documents among them answer 200 to
// a plain GET (/mcp and /graphql want more than that, but are there).
func TestEndpointsAreServed(t *testing.T) {
	f := newFixture(t)
	eps := web.Endpoints()
	if len(eps) < 7 {
		t.Fatalf("endpoints: %v", eps)
	}
	for _, ep := range eps {
		resp, body := f.get(t, ep.Path)
		switch {
		case resp.StatusCode == http.StatusNotFound:
			t.Errorf("%s (%s): 404 %s", ep.Name, ep.Path, body)
		case ep.Path != "/mcp" && ep.Path != "/graphql" && resp.StatusCode != http.StatusOK:
			t.Errorf("%s (%s): %d %s", ep.Name, ep.Path, resp.StatusCode, body)
		}
	}
}
