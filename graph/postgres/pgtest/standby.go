//go:build unix

package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A Standby is a hot standby of the test server: a second postgres on
// another loopback port, streaming the server's WAL. It replicates the
// whole cluster, so a database a test creates on the server appears on it.
type Standby struct {
	t    testing.TB
	dir  string // owned by postgres, 0700: data/, the socket, log
	bin  string // postgres
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	slot string        // the server's replication slot that keeps the standby's WAL
}

// slotPrefix names the replication slots standbys take on the test server:
// lore_standby_PID_N, so that a slot a killed test left behind (which
// would keep WAL forever) can be told from one a running test uses.
const slotPrefix = "lore_standby_"

var slotSeq atomic.Int64

// hbaLine is the pg_hba.conf entry the server needs for pg_basebackup and
// streaming replication from 127.0.0.1.
const hbaLine = "host replication all 127.0.0.1/32 trust"

// NewStandby makes a hot standby of the test server with pg_basebackup in
// a temporary directory and starts it; it is stopped (killed if need be)
// and its directory removed when the test ends. It needs the server's
// binaries (pg_config on PATH), to run as root (it runs postgres as the
// postgres user, as PostgreSQL refuses root) or as postgres, and a
// pg_hba.conf entry allowing replication connections from 127.0.0.1,
// which it adds itself (and reloads the server) when run as root. It
// fails the test, saying what to change, when it cannot.
func NewStandby(t testing.TB) *Standby {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		t.Fatalf("a standby needs PostgreSQL's server binaries; pg_config --bindir: %v (install postgresql-15 and put pg_config on PATH)", err)
	}
	bindir := strings.TrimSpace(string(out))
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("a standby runs as the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)
	if os.Getuid() != 0 && os.Getuid() != uid {
		t.Fatalf("a standby must be started as root or as postgres (PostgreSQL refuses to run as root, so root runs it through runuser -u postgres); this test runs as uid %d", os.Getuid())
	}
	conn, err := connect(ctx)
	if err != nil {
		t.Fatalf("this test needs PostgreSQL at %s (trust auth, database test): %v", AdminURL(), err)
	}
	defer conn.Close(ctx)
	allowReplication(ctx, t, conn)
	dropOrphanSlots(ctx, t, conn)

	dir, err := os.MkdirTemp("", "lore-standby-")
	if err != nil {
		t.Fatal(err)
	}
	// A slot makes the server keep the WAL the standby has not received:
	// without one, a server busy with other tests can recycle a segment
	// between the backup's end and the standby's first connection.
	sb := &Standby{t: t, dir: dir, slot: fmt.Sprintf("%s%d_%d", slotPrefix, os.Getpid(), slotSeq.Add(1))}
	t.Cleanup(sb.cleanup)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cc := conn.Config()
	data := filepath.Join(dir, "data")
	bb := sb.asPostgres(filepath.Join(bindir, "pg_basebackup"), "-D", data, "-R", "-X", "stream", "-c", "fast", "-C", "-S", sb.slot,
		"-h", cc.Host, "-p", strconv.Itoa(int(cc.Port)), "-U", cc.User)
	if out, err := bb.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s\nThe server needs wal_level=replica, max_wal_senders > 0 and the pg_hba.conf line %q (then SELECT pg_reload_conf()).", err, out, hbaLine)
	}
	// A hot standby needs these at least as large as the primary's.
	var conf strings.Builder
	for _, name := range []string{"max_connections", "max_worker_processes", "max_wal_senders", "max_prepared_transactions", "max_locks_per_transaction"} {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&conf, "%s = %s\n", name, v)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sb.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	fmt.Fprintf(&conf, "listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nhot_standby = on\nshared_buffers = 16MB\nfsync = off\n", sb.port, dir)
	for name, text := range map[string]string{"postgresql.conf": conf.String(), "pg_hba.conf": "local all all trust\nhost all all 127.0.0.1/32 trust\n", "pg_ident.conf": ""} {
		p := filepath.Join(data, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	sb.bin = filepath.Join(bindir, "postgres")
	sb.Start()
	return sb
}

// allowReplication makes sure the server's pg_hba.conf lets replication
// connections from 127.0.0.1 in by trust, adding the line and reloading
// the server if not (idempotent), or fails the test saying how.
func allowReplication(ctx context.Context, t testing.TB, conn *pgx.Conn) {
	t.Helper()
	var ok bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_hba_file_rules WHERE type = 'host' AND auth_method = 'trust'
		AND 'replication' = ANY(database) AND (address = '127.0.0.1' OR address = 'all') AND ('all' = ANY(user_name) OR 'postgres' = ANY(user_name)))`).Scan(&ok)
	if err != nil {
		t.Fatalf("reading the server's pg_hba rules: %v", err)
	}
	if ok {
		return
	}
	var hba string
	if err := conn.QueryRow(ctx, "SHOW hba_file").Scan(&hba); err != nil {
		t.Fatal(err)
	}
	fix := fmt.Sprintf("add the line %q to %s and run SELECT pg_reload_conf() as a superuser", hbaLine, hba)
	f, err := os.OpenFile(hba, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("the server does not allow replication connections from 127.0.0.1 by trust, and this test cannot fix it (%v): %s", err, fix)
	}
	_, err = f.WriteString("\n" + hbaLine + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	}
	if err != nil {
		t.Fatalf("allowing replication connections: %v; %s", err, fix)
	}
	t.Logf("added %q to %s and reloaded the server", hbaLine, hba)
}

// asPostgres returns a command running name as the postgres user.
func (sb *Standby) asPostgres(name string, args ...string) *exec.Cmd {
	if os.Getuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// URL returns the URL of database on the standby; db is a database name
// or a URL of the test server, whose database name is kept.
func (sb *Standby) URL(db string) string {
	if u, err := url.Parse(db); err == nil && u.Scheme != "" {
		db = strings.TrimPrefix(u.Path, "/")
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&application_name=lore-standby-reads", sb.port, db)
}

// Port returns the standby's port.
func (sb *Standby) Port() int { return sb.port }

// Start starts the standby and waits until it accepts read-only
// connections.
func (sb *Standby) Start() {
	t := sb.t
	t.Helper()
	if sb.cmd != nil {
		t.Fatal("the standby is running")
	}
	logf, err := os.OpenFile(filepath.Join(sb.dir, "log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := sb.asPostgres(sb.bin, "-D", filepath.Join(sb.dir, "data"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: killed as one in cleanup
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting the standby: %v", err)
	}
	sb.cmd, sb.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(sb.done) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := pgx.Connect(ctx, sb.URL("postgres"))
		if err == nil {
			var rec bool
			err = c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec)
			c.Close(ctx)
			if err == nil && !rec {
				err = errors.New("it is not in recovery")
			}
			if err == nil {
				return
			}
		}
		select {
		case <-sb.done:
			t.Fatalf("the standby exited: %s", sb.Log())
		case <-ctx.Done():
			t.Fatalf("the standby did not accept connections within 2 minutes (%v): %s", err, sb.Log())
		case <-tick.C:
		}
	}
}

// Stop shuts the standby down (fast shutdown: clients are disconnected)
// and waits for it to exit.
func (sb *Standby) Stop() {
	sb.t.Helper()
	if sb.cmd == nil {
		return
	}
	sb.signal(syscall.SIGINT)
	select {
	case <-sb.done:
	case <-time.After(time.Minute):
		sb.signal(syscall.SIGKILL)
		<-sb.done
	}
	sb.cmd = nil
}

// signal sends sig to the postmaster (named by its pid file, since
// runuser stands between) and to the process group.
func (sb *Standby) signal(sig syscall.Signal) {
	if b, err := os.ReadFile(filepath.Join(sb.dir, "data", "postmaster.pid")); err == nil {
		if pid, err := strconv.Atoi(string(bytes.SplitN(b, []byte("\n"), 2)[0])); err == nil && pid > 0 {
			syscall.Kill(pid, sig)
		}
	}
	if sig == syscall.SIGKILL && sb.cmd != nil && sb.cmd.Process != nil {
		syscall.Kill(-sb.cmd.Process.Pid, sig)
	}
}

// WaitReplayed waits until the standby shows database db (a name or a
// URL of the test server) and has replayed everything the server had
// written when it was called.
func (sb *Standby) WaitReplayed(db string) {
	t := sb.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lsn string
	err = conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := pgx.Connect(ctx, sb.URL(db))
		if err == nil {
			var ok bool
			err = c.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&ok)
			c.Close(ctx)
			if err == nil && ok {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the standby did not replay %s within 2 minutes (%v): %s", lsn, err, sb.Log())
		case <-tick.C:
		}
	}
}

// Exec runs a statement on the standby's database db, such as SELECT
// pg_wal_replay_pause().
func (sb *Standby) Exec(db, sql string) {
	sb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, sb.URL(db))
	if err != nil {
		sb.t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		sb.t.Fatalf("%s on the standby: %v", sql, err)
	}
}

// Log returns the end of the standby's server log.
func (sb *Standby) Log() string {
	b, _ := os.ReadFile(filepath.Join(sb.dir, "log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// cleanup kills the standby and removes its directory.
func (sb *Standby) cleanup() {
	if sb.cmd != nil {
		sb.signal(syscall.SIGQUIT) // immediate shutdown: the postmaster ends its children
		select {
		case <-sb.done:
		case <-time.After(30 * time.Second):
			sb.signal(syscall.SIGKILL)
			<-sb.done
		}
		sb.cmd = nil
	}
	if err := os.RemoveAll(sb.dir); err != nil {
		sb.t.Errorf("removing the standby's directory: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if conn, err := connect(ctx); err == nil {
		// The walsender may take a moment to let the slot go.
		for {
			_, err = conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", sb.slot)
			var n int
			if err == nil {
				err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", sb.slot).Scan(&n)
			}
			if err != nil || n == 0 || ctx.Err() != nil {
				break
			}
		}
		conn.Close(ctx)
		if err != nil {
			sb.t.Errorf("dropping the replication slot %s: %v", sb.slot, err)
		}
	}
}

// dropOrphanSlots drops the standbys' slots whose test process is gone.
func dropOrphanSlots(ctx context.Context, t testing.TB, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, "SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE $1 AND NOT active", slotPrefix+"%")
	if err != nil {
		t.Fatalf("listing replication slots: %v", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("listing replication slots: %v", err)
	}
	for _, name := range names {
		pid, _, _ := strings.Cut(strings.TrimPrefix(name, slotPrefix), "_")
		if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() && syscall.Kill(n, 0) != nil {
			conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", name)
		}
	}
}
