package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeSynopsis returns the README's CLI synopsis (the first code block
// under "## The CLI"): each command's flags, with the groups ("[store
// flags]") it names expanded.
func readmeSynopsis(t *testing.T) map[string]map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## The CLI\n")
	if !ok {
		t.Fatal(`README.md has no "## The CLI" section`)
	}
	_, block, ok := strings.Cut(section, "```\n")
	if !ok {
		t.Fatal("the CLI section has no code block")
	}
	block, _, _ = strings.Cut(block, "```")

	flagRE := regexp.MustCompile(`(?:^|[\s\[|])--?([a-z][a-z0-9-]*)`)
	groupRE := regexp.MustCompile(`\[(\w+) flags\]`)
	entries := map[string]string{} // command → its text
	groups := map[string]string{}  // group → its text
	cur := ""                      // the command whose entry goes on
	for line := range strings.SplitSeq(block, "\n") {
		fields := strings.Fields(line)
		indented := strings.HasPrefix(line, " ")
		switch {
		case len(fields) == 0:
			cur = ""
		case fields[0] == "lore" && len(fields) > 1 && !indented:
			cur = fields[1]
			if _, dup := entries[cur]; dup {
				t.Errorf("the synopsis lists lore %s twice", cur)
			}
			entries[cur] = strings.Join(fields[2:], " ")
		case len(fields) > 1 && fields[1] == "flags" && !indented:
			groups[fields[0]] = strings.Join(fields[2:], " ")
			cur = ""
		case cur != "" && indented:
			entries[cur] += " " + line
		default:
			t.Errorf("synopsis line outside an entry: %q", line)
		}
	}
	out := map[string]map[string]bool{}
	for cmd, text := range entries {
		for _, m := range groupRE.FindAllStringSubmatch(text, -1) {
			g, ok := groups[m[1]]
			if !ok {
				t.Errorf("lore %s names [%s flags], which the synopsis does not define", cmd, m[1])
			}
			text += " " + g
		}
		out[cmd] = map[string]bool{}
		for _, m := range flagRE.FindAllStringSubmatch(text, -1) {
			out[cmd][m[1]] = true
		}
	}
	return out
}

// commandFlags returns the flags cmd defines, as its --help lists them.
func commandFlags(t *testing.T, cmd string) map[string]bool {
	t.Helper()
	var stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr, getenv: func(string) string { return "" },
		log: slog.New(slog.DiscardHandler)}
	if err := e.run(t.Context(), []string{cmd, "--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("lore %s --help: %v", cmd, err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(stderr.String(), -1) {
		out[m[1]] = true
	}
	return out
}

// TestReadmeSynopsis: the README's synopsis lists every command (but the
// hidden lore hold) and every flag each defines, and nothing else.
func TestReadmeSynopsis(t *testing.T) {
	syn := readmeSynopsis(t)
	want := []string{"version"}
	for name := range commands {
		if name != "hold" {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(syn)); !slices.Equal(got, want) {
		t.Errorf("the synopsis lists the commands %v, want %v", got, want)
	}
	for _, cmd := range want {
		real := commandFlags(t, cmd)
		documented := syn[cmd]
		for f := range real {
			if !documented[f] {
				t.Errorf("lore %s: the README's synopsis misses --%s", cmd, f)
			}
		}
		for f := range documented {
			if !real[f] {
				t.Errorf("lore %s: the README's synopsis lists --%s, which the command does not define", cmd, f)
			}
		}
	}
}
