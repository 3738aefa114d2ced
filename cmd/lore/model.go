package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// cmdModel compares a new model with a store's (lore model diff NEW) and
// puts a compatible one in use (lore model apply NEW).
func cmdModel(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "model", "model diff|apply [--first N] [--json] NEW.json   (what a new model changes, and which stored elements it rejects; apply puts it in use)")
	var sf storeFlags
	sf.register(fs, e)
	first := fs.Int("first", 10, "how many rejected elements to list")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || pos[0] != "diff" && pos[0] != "apply" {
		return usageErr(fs, "want lore model diff NEW.json or lore model apply NEW.json")
	}
	if sf.model != "" {
		return usageErr(fs, "--model does not apply here: the store's own model is compared with NEW.json")
	}
	if *first < 0 {
		return usageErr(fs, "--first must not be negative")
	}
	path, err := e.abs(pos[1])
	if err != nil {
		return err
	}
	m, err := loadModel(path)
	if err != nil {
		return err
	}
	o, err := sf.options(e, true)
	if err != nil {
		return err
	}
	var s graph.Store
	var release func()
	if pos[0] == "apply" {
		if s, err = openExclusive(ctx, e, o, "model apply"); err != nil {
			return err
		}
		release = func() { s.Close() }
	} else if s, release, err = sf.openStore(ctx, e, true); err != nil {
		return err
	}
	r := &modelReport{Model: pos[1], Changes: schema.Diff(s.Model(), m), Warnings: m.Warnings()}
	r.Fit, err = graph.CheckModel(ctx, s, m, *first)
	release()
	if err != nil {
		return err
	}
	if pos[0] == "apply" && r.Fit.Fits() && len(r.Changes) > 0 {
		// Opening the store with the new model rebuilds what it changes in
		// the indexes (with progress) and keeps the model. Nothing else
		// can have written in between: openExclusive found no holder, and
		// this process's lock is taken again at once.
		o.model, o.modelFile, o.modelPath, o.readOnly = m, pos[1], path, false
		s, err := openExclusive(ctx, e, o, "model apply")
		if err != nil {
			return err
		}
		if err := s.Close(); err != nil {
			return err
		}
		r.Applied = true
	}
	if *asJSON {
		if err := printJSON(e, r); err != nil {
			return err
		}
	} else {
		r.write(e.stdout)
	}
	if pos[0] == "apply" && !r.Fit.Fits() {
		return &exitError{1, fmt.Errorf("%s was not applied: it rejects %s and %s the store holds; "+
			"change the data first (lore import, lore delete) or the model", pos[1],
			plural(r.Fit.RejectedNodes, "node"), plural(r.Fit.RejectedEdges, "edge"))}
	}
	return nil
}

// A modelReport is what lore model diff and apply print.
type modelReport struct {
	Model    string               `json:"model"`
	Changes  []schema.ModelChange `json:"changes"`
	Warnings []schema.Violation   `json:"warnings,omitempty"`
	Fit      *graph.ModelFit      `json:"fit"`
	Applied  bool                 `json:"applied"`
}

func (r *modelReport) write(w io.Writer) {
	if len(r.Changes) == 0 {
		fmt.Fprintf(w, "%s changes nothing in the store's model\n", r.Model)
	} else {
		fmt.Fprintf(w, "%s changes the store's model in %s:\n", r.Model, plural(int64(len(r.Changes)), "place"))
		for _, c := range r.Changes {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	for _, v := range r.Warnings {
		fmt.Fprintf(w, "warning: %s: %s\n", v.Pointer, v.Message)
	}
	f := r.Fit
	fmt.Fprintf(w, "the store holds %s and %s; the new model rejects %d node(s) and %d edge(s)", plural(f.Nodes, "node"), plural(f.Edges, "edge"),
		f.RejectedNodes, f.RejectedEdges)
	if len(f.First) == 0 {
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "; the first %d:\n", len(f.First))
		for _, x := range f.First {
			for i, v := range x.Violations {
				if i == 3 {
					fmt.Fprintf(w, "    … and %d more\n", len(x.Violations)-3)
					break
				}
				fmt.Fprintf(w, "  %s %s at %s\n", x.Kind, x.ID, v)
			}
		}
	}
	switch {
	case r.Applied:
		fmt.Fprintln(w, "applied: the store now uses", r.Model)
	case len(r.Changes) == 0:
	case f.Fits():
		fmt.Fprintf(w, "every stored element fits: lore model apply %s puts it in use\n", r.Model)
	}
}
