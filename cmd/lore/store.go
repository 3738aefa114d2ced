package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/schema"
)

// This file is the one place in cmd/lore that names the stores'
// constructors, configurations and files: everything else sees graph.Store.
// A store is a directory (the embedded store) or a postgres:// URL (the
// PostgreSQL store, which several processes open at once: no holder).

// storeOptions say how to open a store.
type storeOptions struct {
	path        string        // the store directory, absolute
	readStore   string        // a standby of the PostgreSQL store at path, for reads; "": none
	model       *schema.Model // nil: the store's own
	modelFile   string        // where model came from, as given, for messages
	modelPath   string        // where model came from, absolute
	readOnly    bool
	lockTimeout time.Duration // 0: the store's default
	noSync      bool
	progress    func(rebuildProgress)
}

// A rebuildProgress reports the embedded store's rebuilding of its indexes as it opens.
type rebuildProgress = bolt.RebuildProgress

func (o storeOptions) embedded() bolt.Config {
	return bolt.Config{Path: o.path, Model: o.model, ReadOnly: o.readOnly, LockTimeout: o.lockTimeout, NoSync: o.noSync,
		Progress: o.progress}
}

// isRemote reports whether a store location is a database URL rather
// than a directory: such a store needs no holder, since every process
// opens it itself.
func isRemote(location string) bool { return postgres.IsURL(location) }

// displayStore returns a store location as messages and pages show it: a
// database URL without its password.
func displayStore(location string) string {
	if isRemote(location) {
		return postgres.Redact(location)
	}
	return location
}

// openBackend opens (or creates) the store o.path names: the PostgreSQL
// store for a postgres:// URL, the embedded store for a directory.
func openBackend(ctx context.Context, o storeOptions) (graph.Store, error) {
	if !isRemote(o.path) {
		return openEmbedded(ctx, o)
	}
	s, err := postgres.Open(ctx, postgres.Config{URL: o.path, ReadURL: o.readStore, Model: o.model, ReadOnly: o.readOnly})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openEmbedded opens (or creates) the embedded store in o.path.
func openEmbedded(ctx context.Context, o storeOptions) (graph.Store, error) {
	s, err := bolt.Open(ctx, o.embedded())
	if err != nil {
		return nil, err
	}
	return s, nil
}

// compactEmbedded rewrites the embedded store in o.path into a fresh file.
func compactEmbedded(ctx context.Context, o storeOptions) (*bolt.CompactStats, error) {
	return bolt.Compact(ctx, o.embedded())
}

// storeExists reports whether dir holds a store.
func storeExists(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, bolt.FileName))
	return err == nil && fi.Size() > 0
}

// removeNew returns a function that removes the store about to be created
// at dir: its file, and dir itself if it does not exist yet.
func removeNew(dir string) func() {
	_, err := os.Stat(dir)
	dirExisted := err == nil
	return func() {
		os.Remove(filepath.Join(dir, bolt.FileName))
		if !dirExisted {
			os.Remove(dir) // only if nothing else is in it
		}
	}
}
