package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lore-dev/lore/graph"
)

// cmdBackup writes a backup of the store into a new directory: a copy of
// the store's file from one read transaction, and a manifest (sequence
// number, counts, size, SHA-256). It runs in the holder when another
// process holds the store, so a live store is copied as it serves. Before
// it renames the backup into place it checks the copy's checksum, and its
// counts and sequence number read back from the file (graph.WriteBackup).
func cmdBackup(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "backup", "backup [--json] DEST   (a consistent copy of the store, even while it serves, into DEST, a new directory)")
	var sf storeFlags
	sf.register(fs, e)
	asJSON := fs.Bool("json", false, "print the backup's manifest as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "backup takes one destination: a directory to create")
	}
	dest, err := e.abs(pos[0])
	if err != nil {
		return err
	}
	s, release, err := sf.openRead(ctx, e)
	if err != nil {
		return err
	}
	defer release()
	m, err := graph.WriteBackup(ctx, s, dest)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, m)
	}
	fmt.Fprintf(e.stdout, "backed up %s and %s, as of change %d, into %s (%d bytes, SHA-256 %s); verified\n",
		plural(m.Nodes, "node"), plural(m.Edges, "edge"), m.Seq, dest, m.Bytes, m.SHA256)
	return nil
}

// cmdRestore installs a backup as the store of a new directory: it checks
// the backup's checksum, copies its file into place (written beside its
// name, fsynced, renamed), opens the store, runs its check and compares
// its counts and sequence number with the manifest. It refuses a
// directory that holds a store; on any failure it removes what it
// installed.
func cmdRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "restore", "restore [--json] SRC DIR   (check the backup SRC and install it as the store in DIR, a new or empty directory)")
	asJSON := fs.Bool("json", false, "print the backup's manifest as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErr(fs, "restore takes the backup and the directory to restore it into")
	}
	src, err := e.abs(pos[0])
	if err != nil {
		return err
	}
	dir, err := e.abs(pos[1])
	if err != nil {
		return err
	}
	if storeExists(dir) || findHolder(ctx, dir) != nil {
		return &exitError{1, fmt.Errorf("%s holds a store already: restore refuses to replace one; restore into a new or empty directory (then stop the store's users and move the directories)", dir)}
	}
	_, statErr := os.Stat(dir)
	m, err := graph.InstallBackup(src, dir)
	if err != nil {
		return err
	}
	if err := checkCopy(ctx, dir, m); err != nil {
		os.Remove(filepath.Join(dir, m.File))
		if statErr != nil {
			os.Remove(dir) // only if nothing else is in it
		}
		return fmt.Errorf("the restored store does not check, and was removed: %w", err)
	}
	if *asJSON {
		return printJSON(e, m)
	}
	fmt.Fprintf(e.stdout, "restored %s and %s, as of change %d, into %s; checked: ok\n", plural(m.Nodes, "node"), plural(m.Edges, "edge"), m.Seq, dir)
	return nil
}

// checkCopy opens the store restored in dir, runs its check and compares
// its stats with m.
func checkCopy(ctx context.Context, dir string, m *graph.BackupManifest) error {
	s, err := openEmbedded(ctx, storeOptions{path: dir, readOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	{
		c, ok := s.(graph.Checker)
		if !ok {
			return errors.New("this store cannot be checked")
		}
		r, err := c.Check(ctx)
		if err != nil {
			return err
		}
		if !r.OK() {
			return fmt.Errorf("lore check finds %d problem(s), the first: %s", len(r.Problems), r.Problems[0])
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	return m.Matches(st)
}
