package web

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/lore-dev/lore/mcp"
)

// landingHTML is the landing page with {{name}} placeholders. It is filled
// by string replacement, not html/template: text/template calls methods by
// reflection, which stops the linker from dropping unused methods and
// added 4.5 MB to the binary for one page.
//
//go:embed landing.html
var landingHTML string

// landing serves the page at /: what this server offers and where, with
// its version, and without tokens its store and counts.
func landing(cat *mcp.Catalog, o *Options) http.Handler {
	// What does not change while the server runs.
	version, store := o.Version, o.StorePath
	if version == "" {
		version = "unknown"
	}
	if store == "" {
		store = "(in memory)"
	}
	// With tokens the page is still public, but the data is not: it shows
	// neither where the store lives nor what it holds.
	private := len(o.HTTP.Tokens) > 0
	// The stdio snippets: lore mcp on this store.
	mcpArgs := []string{"mcp"}
	switch {
	case private:
		mcpArgs = append(mcpArgs, "--store", "DIR")
	case o.StorePath != "":
		mcpArgs = append(mcpArgs, "--store", o.StorePath)
	}
	command, commandNote := o.Command, ""
	if !filepath.IsAbs(command) {
		command, commandNote = "/path/to/lore", " (<code>command -v lore</code> prints it)"
	}
	stdio := func(command string, extra map[string]any) map[string]any {
		s := map[string]any{"command": command, "args": mcpArgs}
		maps.Copy(s, extra)
		return map[string]any{"lore": s}
	}
	desktop := snippet(map[string]any{"mcpServers": stdio(command, nil)})
	project := snippet(map[string]any{"mcpServers": stdio("lore", nil)})
	vscode := snippet(map[string]any{"servers": stdio("lore", map[string]any{"type": "stdio"})})
	claude := "claude mcp add --scope user lore -- lore " + strings.Join(mcpArgs, " ")
	var tools strings.Builder
	for _, t := range cat.Tools() {
		fmt.Fprintf(&tools, "      <li><code>%s</code>: %s", html.EscapeString(t.Name), html.EscapeString(t.Title))
		if t.Write {
			tools.WriteString(` <span class="note">(writes)</span>`)
		}
		tools.WriteString("</li>\n")
	}
	tokens := ""
	if len(o.HTTP.Tokens) > 0 {
		tokens = `  <p class="note">This server asks for a bearer token on /mcp, /api and /graphql (<code>Authorization: Bearer …</code>).
    The public documents and this page need none. In a browser, <a href="/signin" id="signin-link">sign in</a> with a token
    once to use the console and the explorer.</p>
`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		mcpURL := scheme + "://" + r.Host + "/mcp"
		server := map[string]any{"type": "http", "url": mcpURL}
		if tokens != "" {
			server["headers"] = map[string]string{"Authorization": "Bearer ${LORE_TOKEN}"}
		}
		httpJSON := snippet(map[string]any{"mcpServers": map[string]any{"lore": server}})
		facts := ""
		if !private {
			facts = "\n    · store <code id=\"store\">" + html.EscapeString(store) + "</code>"
			if st, err := cat.Store().Stats(r.Context()); err == nil {
				changes := "changes"
				if st.LastSeq == 1 {
					changes = "change"
				}
				facts += fmt.Sprintf(" · %d nodes, %d edges, %d %s", st.Nodes, st.Edges, st.LastSeq, changes)
			} else {
				o.Logger.Warn("landing page: store stats", "error", err)
			}
		}
		page := strings.NewReplacer(
			"{{version}}", html.EscapeString(version),
			"{{store_facts}}", facts,
			"{{command_note}}", commandNote,
			"{{desktop_json}}", desktop,
			"{{project_json}}", project,
			"{{vscode_json}}", vscode,
			"{{claude_cmd}}", html.EscapeString(claude),
			"{{tokens}}", tokens,
			"{{mcp_url}}", html.EscapeString(mcpURL),
			"{{mcp_json}}", httpJSON,
			"{{tools}}", tools.String(),
		).Replace(landingHTML)
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", cspLanding)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		w.Write([]byte(page))
	})
}

// snippet is v as indented JSON, escaped for HTML.
func snippet(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return html.EscapeString(string(b))
}
