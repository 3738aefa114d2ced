package bolt

import "github.com/lore-dev/lore/graph"

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

// tokenKey keys a posting: token NUL type NUL ID.
func tokenKey(tok, typ string, id graph.ID) []byte {
	k := make([]byte, 0, len(tok)+len(typ)+len(id)+2)
	k = append(k, tok...)
	k = append(k, 0)
	k = append(k, typ...)
	k = append(k, 0)
	return append(k, id...)
}

// impKey keys a posting in impact order, in the same bucket (bTok) as
// tokenKey's, after a NUL that no token starts with: NUL token NUL
// (255 - weight) ID NUL type -> weight. Reading a token's postings by weight
// is then a scan in key order (see Store.Postings).
func impKey(tok string, w byte, id graph.ID, typ string) []byte {
	k := make([]byte, 0, len(tok)+len(id)+len(typ)+4)
	k = append(k, 0)
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
