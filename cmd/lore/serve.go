package main

import (
	"context"
	"fmt"
)

// cmdServe opens the store, loading the example dataset into a new store
// with the default model, and holds it until interrupted. The MCP, GraphQL
// and REST surfaces mount here as they are built.
func cmdServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve", "serve [--no-example] [ceiling flags]")
	var sf storeFlags
	var cf ceilingFlags
	sf.register(fs, e)
	cf.register(fs)
	noExample := fs.Bool("no-example", false, "do not load the example dataset into a new store")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	s, err := sf.open(ctx, e)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	if st.LastSeq == 0 && st.Nodes == 0 && sf.model == "" && !*noExample {
		is, err := loadExample(ctx, s)
		if err != nil {
			return fmt.Errorf("loading the example data: %w", err)
		}
		e.log.Info("loaded the example dataset", "nodes", is.Nodes, "edges", is.Edges)
		if st, err = s.Stats(ctx); err != nil {
			return err
		}
	}
	e.log.Info("store open", "path", s.Path(), "nodes", st.Nodes, "edges", st.Edges, "changes", st.LastSeq, "ceilings", cf.limits())
	e.log.Info("serving; press Ctrl-C to stop (the MCP, GraphQL and REST surfaces are not built yet)")
	<-ctx.Done()
	e.log.Info("shutting down")
	return nil
}
