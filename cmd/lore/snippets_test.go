package main

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connection snippets, on the landing page and in the README: each is
// parsed, and the command it names is run (or the URL it names reached).

// mcpEntry is a server entry of a client's configuration.
type mcpEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	URL     string            `json:"url"`
	Env     map[string]string `json:"env"`
}

// parseSnippet reads a client configuration: {"mcpServers": {"lore": …}}
// or VS Code's {"servers": {"lore": …}}.
func parseSnippet(t *testing.T, name, text string) mcpEntry {
	t.Helper()
	var cfg struct {
		MCPServers map[string]mcpEntry `json:"mcpServers"`
		Servers    map[string]mcpEntry `json:"servers"`
	}
	if err := json.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, text)
	}
	for _, m := range []map[string]mcpEntry{cfg.MCPServers, cfg.Servers} {
		if e, ok := m["lore"]; ok {
			return e
		}
	}
	t.Fatalf("%s: no server called lore:\n%s", name, text)
	return mcpEntry{}
}

// loreOnPath puts the test's binary first on PATH, as "lore".
func loreOnPath(t *testing.T) {
	t.Setenv("PATH", filepath.Dir(loreBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestLandingSnippetsConnect: every snippet on the landing page of a
// running lore serve works as given: the HTTP one reaches its MCP
// endpoint, and the command of each stdio one (the desktop app's absolute
// path, the project's and VS Code's lore, Claude Code's command line)
// starts a lore mcp that serves a session on the same store.
func TestLandingSnippetsConnect(t *testing.T) {
	loreOnPath(t)
	store := newStore(t)
	p := startServeEnv(t, nil, "--store", store, "--addr", "127.0.0.1:0")
	resp, err := http.Get(p.urls["landing page"])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	snippets := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<pre id="([\w-]+)"><code>(.*?)</code></pre>`).FindAllStringSubmatch(string(page), -1) {
		snippets[m[1]] = html.UnescapeString(m[2])
	}
	for _, id := range []string{"mcp-json", "snippet-desktop", "snippet-project", "snippet-vscode", "snippet-claude"} {
		if snippets[id] == "" {
			t.Fatalf("the landing page has no snippet %s:\n%s", id, page)
		}
	}

	h := parseSnippet(t, "mcp-json", snippets["mcp-json"])
	if h.Type != "http" || h.URL != p.urls["serving MCP"] {
		t.Errorf("HTTP snippet: %+v, want type http and url %s", h, p.urls["serving MCP"])
	}
	checkSession(t, "HTTP snippet", httpClient(t, "http-snippet", h.URL))

	stdio := map[string]mcpEntry{}
	for _, id := range []string{"snippet-desktop", "snippet-project", "snippet-vscode"} {
		stdio[id] = parseSnippet(t, id, snippets[id])
	}
	if d := stdio["snippet-desktop"]; d.Command != loreBin {
		t.Errorf("desktop snippet runs %q, want this lore's absolute path %s", d.Command, loreBin)
	}
	if v := stdio["snippet-vscode"]; v.Type != "stdio" {
		t.Errorf("VS Code snippet: type %q, want stdio", v.Type)
	}
	cmdline, ok := strings.CutPrefix(snippets["snippet-claude"], "claude mcp add --scope user lore -- ")
	if !ok {
		t.Errorf("Claude Code snippet: %q", snippets["snippet-claude"])
	}
	fields := strings.Fields(cmdline)
	stdio["snippet-claude"] = mcpEntry{Command: fields[0], Args: fields[1:]}
	for id, e := range stdio {
		if !strings.Contains(strings.Join(e.Args, " "), "mcp --store "+store) {
			t.Errorf("%s: args %q do not name this store", id, e.Args)
		}
		cmd := exec.Command(e.Command, e.Args...)
		cmd.Env = testEnv(t)
		checkSession(t, id, connect(t, id, &mcpsdk.CommandTransport{Command: cmd}, nil))
	}
}

// checkSession reads a node of the example data through c.
func checkSession(t *testing.T, name string, c *client) {
	t.Helper()
	res, err := c.cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": "team/payments"}})
	if err != nil || res.IsError {
		t.Errorf("%s: get_node: %v %+v", name, err, res)
	}
}

// TestReadmeSnippetsRun: the README's client configurations parse, and
// the command each names runs: lore mcp --help through the built binary
// (the desktop app's example path stands for it), or the URL is lore
// serve's default; so does the repository's own .mcp.json.
func TestReadmeSnippetsRun(t *testing.T) {
	loreOnPath(t)
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(data), "\n## Install, and connect an MCP client\n")
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) < 4 {
		t.Fatalf("the README's client section has %d JSON snippets, want at least 4 (project, desktop, VS Code, HTTP)", len(blocks))
	}
	mcpJSON, err := os.ReadFile("../../.mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	snippets := map[string]string{".mcp.json": string(mcpJSON)}
	for i, b := range blocks {
		snippets["README snippet "+string(rune('1'+i))] = b[1]
	}
	// Claude Code's command line.
	m := regexp.MustCompile("`claude mcp add [^`]* -- ([^`]*)`").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the README has no claude mcp add command")
	}
	commands := map[string][]string{"claude mcp add": strings.Fields(m[1])}
	var urls int
	for name, text := range snippets {
		e := parseSnippet(t, name, text)
		switch {
		case e.URL != "":
			urls++
			if e.URL != "http://"+DefaultAddr+"/mcp" || e.Type != "http" {
				t.Errorf("%s: %+v, want type http and lore serve's default URL", name, e)
			}
		case e.Command != "":
			commands[name] = append([]string{e.Command}, e.Args...)
		default:
			t.Errorf("%s: neither a command nor a URL: %s", name, text)
		}
	}
	if urls == 0 {
		t.Error("no HTTP snippet")
	}
	for name, argv := range commands {
		exe := argv[0]
		if filepath.IsAbs(exe) && filepath.Base(exe) == "lore" { // the desktop app's example path
			exe = loreBin
		}
		cmd := exec.Command(exe, append(argv[1:], "--help")...)
		cmd.Env = testEnv(t)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Usage: lore mcp") {
			t.Errorf("%s: %s --help: %v\n%s", name, strings.Join(argv, " "), err, out)
		}
	}
}
