package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// cmdModel compares a new model with a store's (lore model diff NEW) and
// puts a compatible one in use (lore model apply NEW).
func cmdModel(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "model", "model diff|apply [--migrate FILE] [--first N] [--json] NEW.json   (what a new model changes, and which stored elements it rejects; apply puts it in use)")
	var sf storeFlags
	sf.register(fs, e)
	first := fs.Int("first", 10, "how many rejected elements to list")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	migrateFile := fs.String("migrate", "", "a migration `file` (JSON: steps that rename a property, set a default, convert a type, re-type nodes) the data goes through: the new model is checked against the data as migrated, and apply runs it as batches in the change log")
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
	var mig *graph.Migration
	if *migrateFile != "" {
		mp, err := e.abs(*migrateFile)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(mp)
		if err != nil {
			return err
		}
		if mig, err = graph.ParseMigration(data); err != nil {
			return &exitError{2, fmt.Errorf("%s: %w", *migrateFile, err)}
		}
	}
	o, err := sf.options(e, true)
	if err != nil {
		return err
	}
	var s graph.Store
	var release func()
	// inPlace: the model is put in use on the store as it was opened for
	// the check (graph.ModelSwitcher), not by opening it again with the
	// model: in the holder that holds the store (a holder runs the command
	// for the process that asked), which goes on serving and whose MCP
	// sessions hear of it as of any change; and on PostgreSQL, whose other
	// replicas write while the data is checked. Writes that come between
	// the check and the switch are checked too (useModel).
	apply := pos[0] == "apply"
	inPlace := apply && (e.held != nil || isRemote(o.path))
	switch {
	case apply && !inPlace:
		if h := findHolder(ctx, o.path); h != nil {
			return &heldError{h} // the holder runs it (see env.run)
		}
		if s, err = openExclusive(ctx, e, o, "model apply"); err != nil {
			return err
		}
		release = func() { s.Close() }
	case inPlace && e.held == nil:
		o.readOnly = false
		if s, err = openExclusive(ctx, e, o, "model apply"); err != nil {
			return err
		}
		release = func() { s.Close() }
	default:
		if s, release, err = sf.openStore(ctx, e, true); err != nil {
			return err
		}
	}
	checked := release // when the check is done
	var at uint64      // the last change the data is checked at
	if inPlace {
		defer release()
		checked = func() {}
		st, err := s.Stats(ctx)
		if err != nil {
			return err
		}
		at = st.LastSeq
	}
	r := &modelReport{Model: pos[1], Changes: schema.Diff(s.Model(), m), Warnings: m.Warnings()}
	view := s
	interimM, interim := m, false // see interimModel
	if mig != nil {
		if interimM, interim, err = interimModel(ctx, s, m); err != nil {
			checked()
			return err
		}
	}
	if mig != nil {
		// The data as the migration will leave it: each value must convert,
		// and the new model must take every element.
		r.Migration, err = graph.Migrate(ctx, s, mig, graph.MigrationOptions{DryRun: true, First: *first})
		if err != nil && r.Migration == nil {
			checked()
			return err
		}
		view = graph.Migrated(s, mig)
	}
	r.Fit, err = graph.CheckModel(ctx, view, m, *first)
	checked()
	if err != nil {
		return err
	}
	migrates := r.Migration != nil && r.Migration.Failed == 0
	if pos[0] == "apply" && r.Fit.Fits() && r.Migration != nil && r.Migration.Failed > 0 {
		r.write(e.stdout)
		return &exitError{1, fmt.Errorf("%s was not applied: the migration cannot change %s; nothing was written", pos[1], plural(r.Migration.Failed, "node"))}
	}
	if pos[0] == "apply" && r.Fit.Fits() && (len(r.Changes) > 0 || migrates && r.Migration.Changed > 0) {
		// A migration that moves the nodes of a type the new model drops
		// (retypeNodes) runs under the new model with that type still in
		// it; the new model itself is put in use once the type is empty.
		use := m
		if migrates && r.Migration.Changed > 0 {
			use = interimM
		} else {
			interim = false
		}
		s, err := useModel(ctx, e, o, s, inPlace, use, pos[1], path, view, at, *first)
		if err != nil {
			return err
		}
		if migrates && r.Migration.Changed > 0 {
			// Under the new model, each batch of migrated nodes is validated
			// as any write is. A run stopped here leaves the model in use and
			// the data part migrated: the same command finishes it (every
			// step is idempotent).
			rep, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{Progress: func(examined, changed int64) {
				if e.tty {
					fmt.Fprintf(e.stderr, "\rmigrated %d of %d nodes", changed, r.Migration.Changed)
				}
			}})
			if e.tty {
				fmt.Fprintln(e.stderr)
			}
			if err != nil {
				if !inPlace {
					s.Close()
				}
				return fmt.Errorf("the model is in use but the migration stopped: %w; run the same lore model apply again to finish it", err)
			}
			r.Migration = rep
			r.Migrated = true
		}
		if interim {
			var at uint64
			if inPlace {
				st, err := s.Stats(ctx)
				if err != nil {
					return err
				}
				at = st.LastSeq
			} else if err := s.Close(); err != nil {
				return err
			}
			if s, err = useModel(ctx, e, o, s, inPlace, m, pos[1], path, s, at, *first); err != nil {
				return fmt.Errorf("the data is migrated but %s could not be put in use: %w; run the same lore model apply again", pos[1], err)
			}
		}
		if !inPlace {
			if err := s.Close(); err != nil {
				return err
			}
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

// useModel puts m (read from file, at path) in use on the store: in
// place, on s (see cmdModel's inPlace), checking view (s as the migration
// leaves it) again for the writes after change at, where the data was
// checked; else by opening the store again with m, which rebuilds what m
// changes in the indexes (with progress) and keeps it. Nothing else can
// have written in between then: openExclusive found no holder, and this
// process's lock is taken again at once.
func useModel(ctx context.Context, e *env, o storeOptions, s graph.Store, inPlace bool, m *schema.Model, file, path string, view graph.Store, at uint64, first int) (graph.Store, error) {
	if !inPlace {
		o.model, o.modelFile, o.modelPath, o.readOnly = m, file, path, false
		return openExclusive(ctx, e, o, "model apply")
	}
	sw, ok := s.(graph.ModelSwitcher)
	if !ok {
		return nil, &exitError{1, fmt.Errorf("the store cannot change its model while it is open: stop the process that holds it, then run lore model apply again")}
	}
	for try := 1; ; try++ {
		_, err := sw.UseModel(ctx, m, at)
		if !errors.Is(err, graph.ErrConflict) {
			return s, err
		}
		// Written since the check: check what was written, and try again.
		fit, last, cerr := graph.CheckModelSince(ctx, view, m, at, first)
		switch {
		case cerr != nil:
			return nil, cerr
		case last == at: // not a write: the conflict is another (a load under way)
			return nil, err
		case !fit.Fits():
			var b strings.Builder
			for _, x := range fit.First {
				fmt.Fprintf(&b, "\n  %s %s at %s", x.Kind, x.ID, x.Violations[0])
			}
			return nil, &exitError{1, fmt.Errorf("%s was not applied: %s and %s written while it was checked break it; nothing was changed; the first:%s",
				file, plural(fit.RejectedNodes, "node"), plural(fit.RejectedEdges, "edge"), b.String())}
		case try == maxModelTries:
			return nil, fmt.Errorf("%w; the store was written after each of %d checks: run lore model apply again when it is quieter", err, try)
		}
		at = last
	}
}

// maxModelTries bounds how often useModel checks new writes and tries again.
const maxModelTries = 10

// A modelReport is what lore model diff and apply print.
type modelReport struct {
	Model    string               `json:"model"`
	Changes  []schema.ModelChange `json:"changes"`
	Warnings []schema.Violation   `json:"warnings,omitempty"`
	Fit      *graph.ModelFit      `json:"fit"`
	// Migration is what the migration given does (or did, with Migrated).
	Migration *graph.MigrationReport `json:"migration,omitempty"`
	Migrated  bool                   `json:"migrated,omitempty"`
	Applied   bool                   `json:"applied"`
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
	if mr := r.Migration; mr != nil {
		verb := "changes"
		if r.Migrated {
			verb = fmt.Sprintf("changed (in %s)", plural(int64(mr.Batches), "batch"))
		}
		fmt.Fprintf(w, "the migration %s %d of the %d nodes of its types", verb, mr.Changed, mr.Examined)
		if mr.Failed == 0 {
			fmt.Fprintln(w)
		} else {
			fmt.Fprintf(w, "; it cannot change %s, the first %d:\n", plural(mr.Failed, "node"), len(mr.First))
			for _, x := range mr.First {
				fmt.Fprintf(w, "  node %s: %s\n", x.ID, x.Violations[0].Message)
			}
		}
	}
	f := r.Fit
	as := ""
	if r.Migration != nil {
		as = " as migrated"
	}
	fmt.Fprintf(w, "the store holds %s and %s; the new model rejects %d node(s) and %d edge(s)%s", plural(f.Nodes, "node"), plural(f.Edges, "edge"),
		f.RejectedNodes, f.RejectedEdges, as)
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
	case f.Fits() && r.Migration != nil:
		fmt.Fprintf(w, "every stored element fits once migrated: lore model apply --migrate FILE %s migrates the data and puts it in use\n", r.Model)
	case f.Fits():
		fmt.Fprintf(w, "every stored element fits: lore model apply %s puts it in use\n", r.Model)
	}
}

// interimModel returns the model a migration runs under before m is put
// in use: m itself, or, when m drops node types the store still holds
// nodes of (which the migration re-types), m with those types as the
// store's model has them, so that the store takes the model while their
// nodes are moved. interim reports the second case.
func interimModel(ctx context.Context, s graph.Store, m *schema.Model) (*schema.Model, bool, error) {
	st, err := s.Stats(ctx)
	if err != nil {
		return nil, false, err
	}
	old := s.Model()
	var keep []string
	for _, t := range old.NodeTypeNames() {
		if _, ok := m.Node(t); !ok && st.NodeTypes[t] > 0 {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		return m, false, nil
	}
	var doc, oldDoc struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	var rest map[string]json.RawMessage
	if err := json.Unmarshal(m.JSON(), &rest); err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(m.JSON(), &doc); err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(old.JSON(), &oldDoc); err != nil {
		return nil, false, err
	}
	for _, t := range keep {
		doc.Defs[t] = oldDoc.Defs[t]
	}
	defs, err := json.Marshal(doc.Defs)
	if err != nil {
		return nil, false, err
	}
	rest["$defs"] = defs
	data, err := json.Marshal(rest)
	if err != nil {
		return nil, false, err
	}
	im, err := schema.Load(data)
	if err != nil {
		return nil, false, fmt.Errorf("the new model with %s kept while the migration moves their nodes: %w", strings.Join(keep, ", "), err)
	}
	return im, true, nil
}
