package main

import (
	"debug/buildinfo"
	"encoding/json"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildVersion: the version comes from the module version, else the
// VCS revision, else it is "dev".
func TestBuildVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "dev"},
		{"go install @version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, "v1.2.3"},
		{"stamped checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201180000-0123456789ab+dirty"},
			Settings: vcs("0123456789abcdef0123456789abcdef01234567", "true")}, true, "v0.0.0-20261201180000-0123456789ab+dirty"},
		{"revision only", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "false")}, true,
			"dev-0123456789ab"},
		{"modified revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "true")}, true,
			"dev-0123456789ab+dirty"},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "dev"},
	} {
		if got := buildVersion(c.info, c.ok); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestVersionEverywhere: lore version, --version, the MCP server's
// serverInfo and the landing page report the version the binary's build
// info gives; lore version --help prints help, not the version.
func TestVersionEverywhere(t *testing.T) {
	info, err := buildinfo.ReadFile(loreBin)
	if err != nil {
		t.Fatal(err)
	}
	want := buildVersion(info, true)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errOut, code := lore(t, args...)
		if code != 0 || out != "lore "+want+"\n" {
			t.Errorf("lore %s: exit %d, %q %s; want lore %s", args[0], code, out, errOut, want)
		}
	}
	out, errOut, code := lore(t, "version", "--help")
	if code != 0 || out != "" || !strings.Contains(errOut, "Usage: lore version") {
		t.Errorf("lore version --help: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := lore(t, "version", "extra"); code != 2 || !strings.Contains(errOut, "no arguments") {
		t.Errorf("lore version extra: exit %d, %s", code, errOut)
	}

	p := startServeEnv(t, nil, "--store", newStore(t), "--addr", "127.0.0.1:0")
	c := httpClient(t, "version", p.urls["serving MCP"])
	if got := c.cs.InitializeResult().ServerInfo.Version; got != want {
		t.Errorf("MCP serverInfo.version %q, want %q", got, want)
	}
	resp, err := http.Get(p.urls["landing page"])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), ">"+want+"<") {
		t.Errorf("the landing page does not show version %s", want)
	}
	// The served documents that state a version state the build's: the
	// OpenAPI document's info.version and the MCP server card's version.
	base := strings.TrimSuffix(p.urls["landing page"], "/")
	for _, c := range []struct{ path, field string }{{"/openapi.json", "info.version"},
		{"/.well-known/mcp/server-card", "version"}} {
		resp, err := http.Get(base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Version string `json:"version"`
			Info    struct {
				Version string `json:"version"`
			} `json:"info"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		got := doc.Version
		if c.field == "info.version" {
			got = doc.Info.Version
		}
		if err != nil || got != want {
			t.Errorf("GET %s: %s %q (%v), want %q", c.path, c.field, got, err, want)
		}
	}
}
