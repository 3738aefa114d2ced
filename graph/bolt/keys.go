package bolt

import (
	"bytes"

	"github.com/lore-dev/lore/graph"
)

func propPrefix(typ, prop string) []byte {
	b := make([]byte, 0, len(typ)+len(prop)+2)
	b = append(b, typ...)
	b = append(b, 0)
	b = append(b, prop...)
	return append(b, 0)
}

// propKeys returns the property index keys of a node.
func propKeys(typ string, indexed []string, id graph.ID, props graph.Props) [][]byte {
	var keys [][]byte
	for _, p := range indexed {
		v, ok := props[p]
		if !ok {
			continue
		}
		for _, enc := range graph.IndexEntries(v) {
			k := propPrefix(typ, p)
			k = append(k, enc...)
			keys = append(keys, append(k, id...))
		}
	}
	return keys
}

func typeKey(typ string, id graph.ID) []byte {
	k := make([]byte, 0, len(typ)+len(id)+1)
	k = append(k, typ...)
	k = append(k, 0)
	return append(k, id...)
}

// degKey keys the count of a node's edges of one label in one direction
// ('o' out, 'i' in) while a write collects them; see foldDeg.
func degKey(id graph.ID, dir byte, label string) []byte {
	k := make([]byte, 0, len(id)+len(label)+2)
	k = append(k, id...)
	k = append(k, 0, dir)
	return append(k, label...)
}

func countKey(kind, name string) []byte { return []byte("count/" + kind + "/" + name) }

// The search index (bTok) is packed (see packKeys; store layout 11), and
// holds each posting twice, in two families of keys:
//
//	by token:  NUL 't' head NUL token NUL type NUL ID NUL weight     (tokenKey)
//	by weight: NUL 'w' head NUL token NUL (255 - weight) ID NUL type (impKey)
//
// head is the token's first two bytes (its only byte, if it has one), so a
// group of the packed index (up to the key's second NUL) holds the
// postings of every token that starts so. A group per token would hold
// one key for most tokens (a package's name names one node), a block of
// its own each: at 100k nodes of the benchmark graph, packing by token
// took the index from 9.5 to 9.2 MiB, by head to 6 MiB. head is a prefix
// of the token, so each family is in token order; a weight is in its key,
// and the index holds keys only.
const (
	tokByToken  = 't'
	tokByWeight = 'w'
)

// tokHead returns the start of a search key of family fam for token tok:
// NUL fam head NUL.
func tokHead(b []byte, fam byte, tok string) []byte {
	b = append(b, 0, fam)
	b = append(b, tok[:min(2, len(tok))]...)
	return append(b, 0)
}

// tokScanPrefix returns the prefix the keys of family fam share for the
// tokens that start with prefix (equal it, if exact), every one of them
// and no other: for a one-byte prefix, which is not the whole of a head,
// it stops before the head's NUL.
func tokScanPrefix(fam byte, prefix string, exact bool) []byte {
	if len(prefix) < 2 && !exact {
		return append([]byte{0, fam}, prefix...)
	}
	b := append(tokHead(nil, fam, prefix), prefix...)
	if exact {
		b = append(b, 0)
	}
	return b
}

// tokTail returns what follows a search key's head (token NUL ...), or
// nil if k has no head.
func tokTail(k []byte) []byte {
	if len(k) < 3 || k[0] != 0 {
		return nil
	}
	i := bytes.IndexByte(k[2:], 0)
	if i < 0 {
		return nil
	}
	return k[2+i+1:]
}

// tokenKey is a posting in token order (see tokByToken).
func tokenKey(tok, typ string, id graph.ID, w byte) []byte {
	k := make([]byte, 0, 2*len(tok)+len(typ)+len(id)+8)
	k = tokHead(k, tokByToken, tok)
	k = append(k, tok...)
	k = append(k, 0)
	k = append(k, typ...)
	k = append(k, 0)
	k = append(k, id...)
	return append(k, 0, w)
}

// impKey is a posting in impact order (see tokByWeight): reading a
// token's postings by weight, highest first, then by ID, is a scan in key
// order (see Store.Postings).
func impKey(tok string, w byte, id graph.ID, typ string) []byte {
	k := make([]byte, 0, 2*len(tok)+len(id)+len(typ)+8)
	k = tokHead(k, tokByWeight, tok)
	k = append(k, tok...)
	k = append(k, 0, 255-w)
	k = append(k, id...)
	k = append(k, 0)
	return append(k, typ...)
}

// dfPrefix starts the bMeta keys that count a token's postings per type:
// "df/" token NUL type -> count.
const dfPrefix = "df/"

func dfKey(tok, typ string) []byte { return []byte(dfPrefix + tok + "\x00" + typ) }
