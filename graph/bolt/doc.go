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
// Cayley keeps one quad index, [O,P,S] (see oneQuadIndex). Lore's adapter
// keeps Cayley's log and that index in blocks, and each value's ID and
// reference count in one record (see bCayleyLog, bOPS, valueRecord). A bulk load into
// an empty store writes Cayley's layout itself rather than through
// Cayley's writer (see quadLoad).
//
// A traversal (edges of a frontier, by label and direction) never reads
// Cayley's quads: out-edges come from Lore's edge records, keyed from,
// label, to, key, and in-edges from the in-edge index beside them, keyed
// to, label, from, key (see graph.Store.Edges) and packed in blocks (see
// packKeys), both in key order, a node's edges of one label being one
// seek and a scan. The index is derived from
// the edge records and written with them in every commit (bulk loads
// included); Check verifies it and Repair rebuilds it. Cayley's [O,P,S]
// index answered in-edges before (store layout 4 and older): each entry
// pointed into Cayley's log, and each value into its value buckets, so a
// hub's in-edges cost three random lookups each (measured: 6-15 µs per
// element visited by a traversal, against under 1 µs now; see
// BenchmarkHubClosure). Properties, timestamps and
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
// Two locks, always taken in this order: wmu, then rw.
//
//   - wmu serialises the writers: Apply (from its idempotency-key lookup
//     and planning to its commit), ApplyStream (for its whole stream), the
//     start and end of bulk and atomic loads, Repair's rebuild, and Close. Planning therefore reads a state nothing else changes.
//   - rw keeps readers and write transactions apart. Every bbolt write
//     transaction runs under its write side: a commit (Cayley's
//     ApplyDeltas, one or two calls, or a quadLoad's write, and Lore's
//     records, index entries, counters, change-log entry and idempotency
//     key, written by the hook at Cayley's commit into the same
//     transaction), a deferred flush, a quadLoad's last writes, a
//     rebuild, the marks of a load. Every read primitive runs under its read
//     side, in one bbolt read transaction (plus, for Stats and Check,
//     Cayley's own read transactions): they must not meet a commit, because a commit
//     that grows the file remaps it and waits for every open read
//     transaction, while a reader opening its second one would wait for the
//     commit (bbolt's mmap lock) — the deadlock Cayley's bbolt store has.
//     Every read primitive is bounded (pages, frontier sizes), so a writer
//     never waits long.
//   - Two read transactions run under wmu only, beside a commit: the one in
//     which ApplyStream plans the next batch while the previous one
//     commits (it reads Lore's records only, through graph.OverlaySnapshot
//     over the plan in flight, never Cayley, so node deletes are not
//     pipelined), and the one in which prepareWrites reads the counters and
//     summaries its commit updates. Each is a single bbolt read transaction
//     that ends on its own, which a remapping commit may wait for safely.
//     In an all-or-nothing bulk load, that planning also reads the edge
//     records that wait in memory (edgeRuns, under its own mutex) while the
//     commit adds its own; a commit that writes them out (one that removes
//     edges) has no planning beside it.
//     When its batches are done, what still waits is merged into the
//     rewritten file (loadRest) under wmu and rw's write side; in the
//     moment between the two, when wmu is free, the store refuses every
//     commit (Store.ending).
//
// What readers see: a read primitive sees one committed state: all of a
// batch or none of it, Cayley's quads and Lore's records alike. lastSeq
// changes under rw's write side with the commit that wrote the entry, and
// Changed's waiters are woken after rw is released, so a woken reader
// finds the entry. A failed commit leaves nothing (bbolt rolls the
// transaction back) and replaces Cayley's QuadStore, whose caches may hold
// the failed transaction's state.
package bolt
