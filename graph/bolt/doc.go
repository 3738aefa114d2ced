// Package bolt is Lore's embedded store: Cayley's KV quad store on a bbolt
// file that Lore opens itself, with Lore's records, indexes, edge summaries,
// change log and idempotency keys in the same file. It implements
// graph.Store and every optional interface of package graph, and it is the
// only package of Lore that imports Cayley, hidalgo or bbolt.
//
// # Storage
//
// A store is a directory holding one bbolt file, store.bolt (FileName),
// which Open opens (with a lock timeout and an initial mmap size) and hands
// to Cayley's KV quad store. Cayley holds the graph's structure as quads, in
// the logical quad mapping of package graph:
//
//	node   <n:ID>   <pg:type>  <t:TYPE>
//	edge   <n:FROM> <e:LABEL>  <n:TO>            (unkeyed edge)
//	edge   <n:FROM> <e:LABEL>  <n:TO>  <k:KEY>   (keyed edge: the key is the quad label)
//
// A traversal (edges of a frontier, by label and direction) reads in-edges
// from Cayley's [O,P,S] index and out-edges from Lore's edge records, keyed
// from, label, to, key (see graph.Store.Edges). Properties, timestamps and
// revisions are not quads: Cayley's KV never compacts a deleted quad, so
// every property update would leave a tombstone that later reads must skip
// (measured: 3,000 updates of one property took a read from 94 µs to
// 4.5 ms), and a literal per property costs a value entry, a refcount and an
// index entry (measured here: a 5-property node costs 6 quads and loads at
// well under half the rate). They live instead in Lore's own buckets in the
// same bbolt file, written in the same transaction as the quads (see
// hookKV), together with the type and property indexes, the per-node edge
// summaries, the change log and the idempotency keys. A crash therefore
// never leaves them out of step.
//
// # Concurrency
//
// One writer at a time: wmu serialises Apply, ApplyStream, bulk loads and
// Close. Cayley's bbolt store deadlocks when a commit remaps the file while
// readers hold transactions, so readers take the read side of an RW lock
// (rw) for each primitive call and a commit takes the write side while
// Cayley commits. Every primitive is bounded (pages, frontier sizes), so a
// writer never waits long.
package bolt
