package bolt

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// postingsOf looks the postings of one token up for the nodes q.Nodes.
func (s *Store) postingsOf(q graph.PostingQuery) (*graph.PostingPage, error) {
	page := &graph.PostingPage{}
	err := s.read(func(tx *bbolt.Tx) error {
		c := newPackedCursor(tx.Bucket(bTok))
		for _, n := range q.Nodes {
			if q.Type != "" && n.Type != q.Type {
				continue
			}
			page.Scanned++
			// The posting, if any, is the one key after the node's
			// prefix: its weight is the byte after it.
			at := tokenKey(q.Prefix, n.Type, n.ID, 0)
			at = at[:len(at)-1]
			if k := c.Seek(at); len(k) == len(at)+1 && bytes.HasPrefix(k, at) {
				page.Postings = append(page.Postings, graph.Posting{Token: q.Prefix, Type: n.Type, ID: n.ID, Weight: int(k[len(at)])})
			}
		}
		return c.err
	})
	return page, err
}

// postingsByWeight reads the postings of one token in impact order (see
// impKey): by weight, highest first, then by ID. A type filter skips the
// postings of other types, which count as examined.
func (s *Store) postingsByWeight(q graph.PostingQuery) (*graph.PostingPage, error) {
	limit := q.Size()
	maxScan := q.MaxScan
	if maxScan <= 0 {
		maxScan = limit
	}
	prefix := tokScanPrefix(tokByWeight, q.Prefix, true)
	var after []byte
	if q.After != "" {
		var err error
		if after, err = base64.RawURLEncoding.DecodeString(q.After); err != nil || !bytes.HasPrefix(after, prefix) {
			return nil, fmt.Errorf("cursor %q does not belong to this index scan: %w", q.After, graph.ErrInvalid)
		}
	}
	page := &graph.PostingPage{}
	err := s.read(func(tx *bbolt.Tx) error {
		c := newPackedCursor(tx.Bucket(bTok))
		k := c.Seek(prefix)
		if after != nil {
			if k = c.Seek(after); bytes.Equal(k, after) {
				k = c.Next()
			}
		}
		var last []byte
		for ; k != nil && bytes.HasPrefix(k, prefix); k = c.Next() {
			if last != nil && (page.Scanned == maxScan || len(page.Postings) == limit) {
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				break
			}
			last = append(last[:0], k...)
			page.Scanned++
			// (255 - weight) ID NUL type
			rest := k[len(prefix):]
			sep := bytes.LastIndexByte(rest, 0)
			if len(rest) < 2 || sep < 1 {
				continue
			}
			typ := rest[sep+1:]
			if q.Type != "" && string(typ) != q.Type {
				continue
			}
			page.Postings = append(page.Postings, graph.Posting{Token: q.Prefix, Type: string(typ), ID: graph.ID(rest[1:sep]), Weight: 255 - int(rest[0])})
		}
		return c.err
	})
	return page, err
}

// Terms lists the tokens that start with q.Prefix, with their posting
// counts (the dfKey counters).
func (s *Store) Terms(ctx context.Context, q graph.TermQuery) ([]graph.Term, error) {
	if q.Prefix == "" {
		return nil, fmt.Errorf("empty search token: %w", graph.ErrInvalid)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = graph.DefaultPageSize
	}
	prefix := []byte(dfPrefix + q.Prefix)
	if q.Exact {
		prefix = append(prefix, 0)
	}
	var out []graph.Term
	err := s.read(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bMeta).Cursor()
		scanned := 0
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && scanned < graph.MaxTermScan; k, v = c.Next() {
			scanned++
			rest := k[len(dfPrefix):]
			sep := bytes.IndexByte(rest, 0)
			if sep < 0 || len(v) != 8 {
				continue
			}
			tok, typ := rest[:sep], rest[sep+1:]
			if q.Type != "" && string(typ) != q.Type {
				continue
			}
			n := int(binary.BigEndian.Uint64(v))
			if len(out) > 0 && out[len(out)-1].Token == string(tok) {
				out[len(out)-1].Count += n
				continue
			}
			if len(out) == limit {
				break
			}
			out = append(out, graph.Term{Token: string(tok), Count: n})
		}
		return nil
	})
	return out, err
}
