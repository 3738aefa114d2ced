package mcp

import (
	"context"
	"encoding/json"
)

// PanicTool is the name of the tool AddPanicTool adds.
const PanicTool = "panic_for_test"

// AddPanicTool adds a read tool that panics to c, before a Server is built
// over it: tests of recovery use it to panic without a real bug. It exists
// only in this package's tests, never in the production catalog.
func AddPanicTool(c *Catalog) {
	t := &Tool{Name: PanicTool, Title: "Panic", Description: "Panics, to test that no call ends the process.",
		Input:  json.RawMessage(`{"type":"object"}`),
		Output: json.RawMessage(`{"type":"object"}`), ReadOnly: true, Idempotent: true, Icon: iconRead,
		run: func(context.Context, *Catalog, json.RawMessage) (output, error) { panic("injected panic in a tool") }}
	comp := newCompiler(c.Model())
	t.in = mustCompile(comp, "lore:tool/"+t.Name+"/input", t.Input)
	c.outputs[t.Name] = mustCompile(comp, "lore:tool/"+t.Name+"/output", t.Output)
	c.tools = append(c.tools, t)
	c.byName[t.Name] = t
}

// StrictOutput is the closed copy of the tool's output schema that
// ValidateOutput checks every result against.
func (t *Tool) StrictOutput() json.RawMessage { return t.strictOutput }
