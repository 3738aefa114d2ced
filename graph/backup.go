package graph

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"time"
)

// A backup is a directory holding a copy of a store's file (see Backuper)
// and BackupManifestName, a manifest saying what the copy holds and how to
// check it. It is written whole or not at all: into a temporary directory
// beside its final name, each file fsynced, then renamed into place and
// the parent directory fsynced.

// BackupManifestName is the manifest's name in a backup directory.
const BackupManifestName = "backup.json"

// BackupFormat names the manifest's format.
const BackupFormat = "lore-backup/1"

// A BackupManifest describes a backup: the copy's file, size and SHA-256,
// and what the store held at the copy (its last change-log entry and its
// counts, as Stats reports them).
type BackupManifest struct {
	Format  string    `json:"format"`
	Created time.Time `json:"created"`
	SHA256  string    `json:"sha256"`
	BackupInfo
}

// WriteBackup writes a backup of s into dir, which must not exist yet, and
// returns its manifest. Before it renames the backup into place it checks
// what it wrote: the copy's counts and sequence number, read back from the
// file (Backuper.ReadBackup), against those of the transaction it was
// copied in, and its checksum (VerifyBackup). A store that is not a
// Backuper is ErrInvalid.
func WriteBackup(ctx context.Context, s Store, dir string) (_ *BackupManifest, err error) {
	b, ok := s.(Backuper)
	if !ok {
		return nil, fmt.Errorf("this store cannot be backed up (lore export keeps a copy of its data): %w", ErrInvalid)
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("%s exists; a backup goes into a new directory: %w", dir, ErrInvalid)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".partial-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	var info *BackupInfo
	sum, err := writeSynced(filepath.Join(tmp, "copy"), func(w io.Writer) error {
		var err error
		info, err = b.Backup(ctx, w)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(tmp, "copy"), filepath.Join(tmp, info.File)); err != nil {
		return nil, err
	}
	// What the copy holds, read back from the file: the counts the
	// transaction saw, unless the disk or the copy went wrong.
	got, err := b.ReadBackup(filepath.Join(tmp, info.File))
	if err != nil {
		return nil, err
	}
	if got.Seq != info.Seq || got.Nodes != info.Nodes || got.Edges != info.Edges || got.Bytes != info.Bytes ||
		!maps.Equal(got.NodeTypes, info.NodeTypes) || !maps.Equal(got.EdgeLabels, info.EdgeLabels) {
		return nil, fmt.Errorf("the copy holds change %d, %d nodes and %d edges in %d bytes, and the store's transaction had %d, %d and %d in %d: the copy is damaged",
			got.Seq, got.Nodes, got.Edges, got.Bytes, info.Seq, info.Nodes, info.Edges, info.Bytes)
	}
	m := &BackupManifest{Format: BackupFormat, Created: NormalizeTime(time.Now()), SHA256: sum, BackupInfo: *info}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := writeSynced(filepath.Join(tmp, BackupManifestName), func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	}); err != nil {
		return nil, err
	}
	if _, err := VerifyBackup(tmp); err != nil {
		return nil, fmt.Errorf("the copy just written does not check: %w", err)
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return m, syncDir(filepath.Dir(dir))
}

// VerifyBackup reads the backup in dir and checks its file against its
// manifest: size and SHA-256. It returns the manifest.
func VerifyBackup(dir string) (*BackupManifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, BackupManifestName))
	if err != nil {
		return nil, fmt.Errorf("%s is not a backup (lore backup writes one): %w", dir, err)
	}
	var m BackupManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", BackupManifestName, err)
	}
	if m.Format != BackupFormat {
		return nil, fmt.Errorf("%s: format %q; this lore reads %q: %w", BackupManifestName, m.Format, BackupFormat, ErrInvalid)
	}
	if m.File == "" || filepath.Base(m.File) != m.File {
		return nil, fmt.Errorf("%s: file %q is not a file name: %w", BackupManifestName, m.File, ErrInvalid)
	}
	f, err := os.Open(filepath.Join(dir, m.File))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	if n != m.Bytes {
		return nil, fmt.Errorf("%s is %d bytes, and the manifest says %d: the backup is damaged", m.File, n, m.Bytes)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != m.SHA256 {
		return nil, fmt.Errorf("%s has SHA-256 %s, and the manifest says %s: the backup is damaged", m.File, sum, m.SHA256)
	}
	return &m, nil
}

// InstallBackup checks the backup in src (VerifyBackup) and copies its
// file into dir, creating dir if needed: written beside its final name,
// fsynced, renamed into place, the directory fsynced. dir must hold no
// file of that name. The caller opens the store then, checks it and
// compares it with the manifest (Matches).
func InstallBackup(src, dir string) (*BackupManifest, error) {
	m, err := VerifyBackup(src)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	final := filepath.Join(dir, m.File)
	if _, err := os.Lstat(final); err == nil {
		return nil, fmt.Errorf("%s holds a store already; restore into a new or empty directory: %w", dir, ErrConflict)
	}
	in, err := os.Open(filepath.Join(src, m.File))
	if err != nil {
		return nil, err
	}
	defer in.Close()
	tmp := final + ".restoring"
	sum, err := writeSynced(tmp, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
	if err == nil && sum != m.SHA256 {
		err = fmt.Errorf("the copy has SHA-256 %s, and the manifest says %s: the disk changed it as it was written", sum, m.SHA256)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return m, syncDir(dir)
}

// Matches reports whether st, the stats of a store restored from the
// backup, agree with the manifest: the same last sequence number and the
// same counts per type and label.
func (m *BackupManifest) Matches(st *Stats) error {
	nonzero := func(c map[string]int64) map[string]int64 {
		out := map[string]int64{}
		for k, v := range c {
			if v != 0 {
				out[k] = v
			}
		}
		return out
	}
	switch {
	case st.LastSeq != m.Seq:
		return fmt.Errorf("the store's last change is %d, and the manifest says %d", st.LastSeq, m.Seq)
	case st.Nodes != m.Nodes || st.Edges != m.Edges:
		return fmt.Errorf("the store holds %d nodes and %d edges, and the manifest says %d and %d", st.Nodes, st.Edges, m.Nodes, m.Edges)
	case !maps.Equal(nonzero(st.NodeTypes), nonzero(m.NodeTypes)):
		return fmt.Errorf("the store's nodes per type %v differ from the manifest's %v", st.NodeTypes, m.NodeTypes)
	case !maps.Equal(nonzero(st.EdgeLabels), nonzero(m.EdgeLabels)):
		return fmt.Errorf("the store's edges per label %v differ from the manifest's %v", st.EdgeLabels, m.EdgeLabels)
	}
	return nil
}

// writeSynced creates name (owner-only), writes it with write, fsyncs and
// closes it, and returns the SHA-256 of what was written, in hex.
func writeSynced(name string, write func(io.Writer) error) (string, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// syncDir fsyncs a directory, so that the names created or renamed in it
// last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) { // a system that cannot sync directories
		return nil
	}
	return err
}
