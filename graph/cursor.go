package graph

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// A CursorKeyer is a Store that keeps a secret key with its data, under
// which the query engine authenticates the cursors it hands out (query and
// search cursors), so a client can neither forge nor alter one, nor use
// one against another store. A Store that is not a CursorKeyer gets a key
// drawn at random when the process starts: its cursors do not survive a
// restart.
type CursorKeyer interface {
	// CursorKey returns the store's secret cursor key: 32 random bytes,
	// the same for as long as the store exists.
	CursorKey() []byte
}

// cursorKeySize is the size of a cursor key; cursorMACSize is the size of
// the HMAC-SHA256 prefix of a cursor.
const (
	cursorKeySize = 32
	cursorMACSize = 16
)

// errForeignCursor refuses a cursor that does not authenticate.
var errForeignCursor = fmt.Errorf("the cursor is not one this server issued for this store; send the query again without it: %w", ErrInvalid)

// processCursorKey is the key of stores that keep none.
var processCursorKey = sync.OnceValue(func() []byte {
	k := make([]byte, cursorKeySize)
	rand.Read(k) // never fails (crypto/rand)
	return k
})

func cursorKey(s Store) []byte {
	if k, ok := s.(CursorKeyer); ok {
		if key := k.CursorKey(); len(key) >= cursorMACSize {
			return key
		}
	}
	return processCursorKey()
}

// cursorMAC authenticates a cursor's payload under key; kind (the Go type
// it decodes to) keeps a cursor of one kind from passing for another.
func cursorMAC(key []byte, kind string, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:cursorMACSize]
}

// sealCursor returns the cursor for payload: base64url of its MAC, then
// the payload.
func sealCursor(s Store, kind string, payload []byte) string {
	return base64.RawURLEncoding.EncodeToString(append(cursorMAC(cursorKey(s), kind, payload), payload...))
}

// openCursor returns the payload of a cursor sealed for s, or errForeignCursor.
func openCursor(s Store, kind, c string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < cursorMACSize {
		return nil, errForeignCursor
	}
	mac, payload := raw[:cursorMACSize], raw[cursorMACSize:]
	if !hmac.Equal(mac, cursorMAC(cursorKey(s), kind, payload)) {
		return nil, errForeignCursor
	}
	return payload, nil
}

// encodeCursor returns an opaque cursor holding v, authenticated for s.
func encodeCursor(s Store, v any) string {
	data, _ := json.Marshal(v)
	return sealCursor(s, reflect.TypeOf(v).String(), data)
}

// decodeCursor returns what encodeCursor put in c, or an error wrapping
// ErrInvalid if c was not issued for s (or was altered) or holds another kind.
func decodeCursor[T any](s Store, c string) (T, error) {
	var v T
	data, err := openCursor(s, reflect.TypeFor[T]().String(), c)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("the cursor is damaged; send the query again without it: %w", ErrInvalid)
	}
	return v, nil
}
