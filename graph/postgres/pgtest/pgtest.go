// Package pgtest provides PostgreSQL databases for tests: each test gets a
// database of its own on the server at 127.0.0.1:5432, created when asked
// for and dropped when the test ends. A test that needs one fails (it does
// not skip) when the server is unreachable.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/user"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// AdminURL is the database tests connect to to create theirs; LORE_TEST_PG
// overrides it.
func AdminURL() string {
	if u := os.Getenv("LORE_TEST_PG"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// connect connects to the admin database, as user postgres or else as the
// current user.
func connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, AdminURL())
	if err == nil || os.Getenv("LORE_TEST_PG") != "" {
		return conn, err
	}
	if u, uerr := user.Current(); uerr == nil {
		if c, err2 := pgx.Connect(ctx, "postgres://"+u.Username+"@127.0.0.1:5432/test?sslmode=disable"); err2 == nil {
			return c, nil
		}
	}
	return nil, err
}

// NewDatabase creates an empty database for the test and returns its URL;
// the database is dropped (its connections ended) when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		t.Fatalf("this test needs PostgreSQL at %s (trust auth, database test): %v", AdminURL(), err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	name := "lore_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := connect(ctx)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg := conn.Config()
	return "postgres://" + cfg.User + "@" + cfg.Host + ":" + itoa(int(cfg.Port)) + "/" + name + "?sslmode=disable"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
