package graphtest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lore-dev/lore/graph"
)

// A linearizability check in the manner of Jepsen: clients spread over
// the parts of a deployment (replicas, processes sharing a store) run
// random reads, revision-checked upserts and deletes on a few nodes at
// once; Record notes when each call began and returned, and Linearizable
// asks porcupine whether some order of the calls, each taking effect
// between its call and its return, explains every reply by the Store
// contract (graph/store.go, Writes): a node is created at revision 1, a
// change of its properties adds one, an upsert with equal properties
// keeps it, an expected revision of 0 means "must not exist" and any
// other must equal the current one, and a delete of a missing node is
// ErrNotFound whatever it expects.

// An OpKind is what a Call does.
type OpKind int

// The operations of a history.
const (
	Read OpKind = iota
	Upsert
	Delete
)

// AnyRevision is a Call's Expect when the write expects no revision.
const AnyRevision = -1

// A Call is one operation a client asks for, on one Topic node.
type Call struct {
	Kind OpKind
	Key  graph.ID
	// Value is the name an Upsert writes.
	Value string
	// Expect is the expected revision of an Upsert or Delete: AnyRevision,
	// 0 (the node must not exist) or a revision.
	Expect int64
}

// An Outcome is how a Call ended.
type Outcome int

// Outcomes.
const (
	OK       Outcome = iota
	Conflict         // the expected revision did not match (graph.ErrConflict)
	NotFound         // the node does not exist (graph.ErrNotFound)
)

// A Reply is what a Call returned.
type Reply struct {
	Outcome Outcome
	// Value and Revision are the node's name and revision that an OK Read
	// saw, or that an OK Upsert left.
	Value    string
	Revision int64
}

// A Client runs Calls against one part of a deployment. An error is a
// failure the history cannot explain (a broken connection, a bug), not
// a conflict or a missing node.
type Client interface {
	Do(ctx context.Context, c Call) (Reply, error)
}

// StoreClient returns a Client that calls s directly.
func StoreClient(s graph.Store) Client { return storeClient{s} }

type storeClient struct{ s graph.Store }

func (sc storeClient) Do(ctx context.Context, c Call) (Reply, error) {
	switch c.Kind {
	case Read:
		n, err := sc.s.Node(ctx, c.Key)
		if errors.Is(err, graph.ErrNotFound) {
			return Reply{Outcome: NotFound}, nil
		}
		if err != nil {
			return Reply{}, err
		}
		name, _ := n.Properties["name"].(string)
		return Reply{Value: name, Revision: n.Revision}, nil
	case Upsert:
		r, err := sc.s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{
			ID: c.Key, Type: "Topic", Properties: graph.Props{"name": c.Value}, ExpectedRevision: expected(c.Expect)}}})
		if out, ok := writeError(err); ok {
			return out, nil
		}
		if err != nil {
			return Reply{}, err
		}
		return Reply{Value: c.Value, Revision: r.Nodes[0].Revision}, nil
	case Delete:
		_, err := sc.s.Apply(ctx, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: c.Key, ExpectedRevision: expected(c.Expect)}}})
		if out, ok := writeError(err); ok {
			return out, nil
		}
		return Reply{}, err
	}
	return Reply{}, fmt.Errorf("unknown operation %d", c.Kind)
}

func expected(e int64) *int64 {
	if e == AnyRevision {
		return nil
	}
	return &e
}

// writeError turns a rejected write into its outcome.
func writeError(err error) (Reply, bool) {
	var be *graph.BatchError
	if !errors.As(err, &be) {
		return Reply{}, false
	}
	switch {
	case errors.Is(err, graph.ErrConflict):
		return Reply{Outcome: Conflict}, true
	case errors.Is(err, graph.ErrNotFound):
		return Reply{Outcome: NotFound}, true
	}
	return Reply{}, false
}

// StaleReads returns a Client that serves some of c's reads from a
// snapshot: with probability p, once it has read a key, a read of it
// returns the first reply it got for that key instead of asking c. It is
// the planted bug that shows the check can fail.
func StaleReads(c Client, p float64, seed uint64) Client {
	return &staleClient{c: c, p: p, rnd: rand.New(rand.NewPCG(seed, 7)), seen: map[graph.ID]Reply{}}
}

type staleClient struct {
	c    Client
	p    float64
	mu   sync.Mutex
	rnd  *rand.Rand
	seen map[graph.ID]Reply
}

func (s *staleClient) Do(ctx context.Context, c Call) (Reply, error) {
	if c.Kind == Read {
		s.mu.Lock()
		old, ok := s.seen[c.Key]
		stale := ok && s.rnd.Float64() < s.p
		s.mu.Unlock()
		if stale {
			return old, nil
		}
	}
	r, err := s.c.Do(ctx, c)
	if err == nil && c.Kind == Read {
		s.mu.Lock()
		if _, ok := s.seen[c.Key]; !ok {
			s.seen[c.Key] = r
		}
		s.mu.Unlock()
	}
	return r, err
}

// A History is the operations of a run, with their call and return times
// (nanoseconds on the monotonic clock since the run began).
type History []porcupine.Operation

// Record runs ops operations in all, spread evenly over the clients, each
// client one at a time and the clients at once, on keys (Topic node IDs),
// and returns the history; it logs what the history holds and the seed,
// and fails the test if a client fails. Each client draws from a generator
// seeded with the seed and its index (the interleaving is the machine's): half reads, a third upserts, the rest deletes; a
// write expects any revision (1 in 5), no node (1 in 10), or else the
// revision the client last saw of the key. Upserts write a name of their
// own, or (1 in 5) the name the client last saw, so some are unchanged.
func Record(t testing.TB, clients []Client, keys []graph.ID, ops int) History {
	t.Helper()
	ctx, seed := t.Context(), rand.Uint64()
	start := time.Now()
	now := func() int64 { return time.Since(start).Nanoseconds() }
	per := (ops + len(clients) - 1) / len(clients)
	hs := make([]History, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for ci, cl := range clients {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(seed, uint64(ci)))
			type seen struct {
				value string
				rev   int64
			}
			last := map[graph.ID]seen{}
			for i := range per {
				key := keys[rnd.IntN(len(keys))]
				c := Call{Key: key, Expect: AnyRevision}
				switch r := rnd.IntN(100); {
				case r < 50:
					c.Kind = Read
				case r < 83:
					c.Kind = Upsert
					c.Value = fmt.Sprintf("c%d-%d", ci, i)
					if s, ok := last[key]; ok && rnd.IntN(5) == 0 && s.value != "" {
						c.Value = s.value
					}
				default:
					c.Kind = Delete
				}
				if c.Kind != Read {
					switch r := rnd.IntN(10); {
					case r < 2:
					case r < 3:
						c.Expect = 0
					default:
						c.Expect = last[key].rev
					}
				}
				call := now()
				out, err := cl.Do(ctx, c)
				ret := now()
				if err != nil {
					errs[ci] = fmt.Errorf("client %d, %s: %w", ci, describe(c, Reply{}), err)
					return
				}
				hs[ci] = append(hs[ci], porcupine.Operation{ClientId: ci, Input: c, Call: call, Output: out, Return: ret})
				switch {
				case out.Outcome == OK && c.Kind != Delete:
					last[key] = seen{out.Value, out.Revision}
				case out.Outcome == OK, out.Outcome == NotFound:
					last[key] = seen{}
				}
			}
		})
	}
	wg.Wait()
	var h History
	for _, ch := range hs {
		h = append(h, ch...)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	t.Logf("recorded %s, from %d clients, in %v (seed %d)", h, len(clients), time.Since(start).Round(time.Millisecond), seed)
	return h
}

// node is the model's state of one key: absent, or a name at a revision.
type node struct {
	present bool
	value   string
	rev     int64
}

// step applies c to st and reports whether r is the reply the contract
// allows, with the state after it.
func step(st node, c Call, r Reply) (bool, node) {
	matches := c.Expect == AnyRevision || (c.Expect == 0 && !st.present) || (st.present && c.Expect == st.rev)
	switch c.Kind {
	case Read:
		if !st.present {
			return r.Outcome == NotFound, st
		}
		return r.Outcome == OK && r.Value == st.value && r.Revision == st.rev, st
	case Upsert:
		if !matches {
			return r.Outcome == Conflict, st
		}
		next := node{present: true, value: c.Value, rev: 1}
		if st.present {
			next.rev = st.rev + 1
			if st.value == c.Value {
				next.rev = st.rev // unchanged
			}
		}
		return r.Outcome == OK && r.Revision == next.rev, next
	case Delete:
		switch {
		case !st.present:
			return r.Outcome == NotFound, st
		case !matches:
			return r.Outcome == Conflict, st
		}
		return r.Outcome == OK, node{}
	}
	return false, st
}

// Model is the porcupine model of the Store contract on Topic nodes,
// partitioned by key: the nodes are independent, so each key's operations
// are checked on their own.
var Model = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[graph.ID]int{}
		var parts [][]porcupine.Operation
		for _, op := range h {
			k := op.Input.(Call).Key
			i, ok := by[k]
			if !ok {
				i = len(parts)
				by[k] = i
				parts = append(parts, nil)
			}
			parts[i] = append(parts[i], op)
		}
		return parts
	},
	Init: func() any { return node{} },
	Step: func(st, in, out any) (bool, any) {
		return step(st.(node), in.(Call), out.(Reply))
	},
	Hash: func(st any) uint64 {
		n := st.(node)
		h := fnv.New64a()
		fmt.Fprintf(h, "%t %d %s", n.present, n.rev, n.value)
		return h.Sum64()
	},
	DescribeOperation: func(in, out any) string { return describe(in.(Call), out.(Reply)) },
	DescribeState: func(st any) string {
		n := st.(node)
		if !n.present {
			return "absent"
		}
		return fmt.Sprintf("%s@%d", n.value, n.rev)
	},
}

func describe(c Call, r Reply) string {
	expect := "any"
	if c.Expect != AnyRevision {
		expect = fmt.Sprint(c.Expect)
	}
	var reply string
	switch r.Outcome {
	case OK:
		reply = fmt.Sprintf("%s@%d", r.Value, r.Revision)
	case Conflict:
		reply = "conflict"
	case NotFound:
		reply = "not found"
	}
	switch c.Kind {
	case Read:
		return fmt.Sprintf("read(%s) → %s", c.Key, reply)
	case Upsert:
		return fmt.Sprintf("upsert(%s, %s, expect %s) → %s", c.Key, c.Value, expect, reply)
	case Delete:
		if r.Outcome == OK {
			reply = "deleted"
		}
		return fmt.Sprintf("delete(%s, expect %s) → %s", c.Key, expect, reply)
	}
	return "?"
}

// CheckTimeout bounds the time porcupine takes to check a history.
const CheckTimeout = 20 * time.Second

// Linearizable checks h against Model and fails the test unless
// porcupine's verdict is want: Ok for a history of the real stores,
// Illegal for one with a planted bug. A verdict of Unknown (the check
// ran past CheckTimeout) fails either. When the verdict is not want, it
// writes porcupine's visualization of the history to a file kept after
// the test and logs its path.
func Linearizable(t testing.TB, h History, want porcupine.CheckResult) {
	t.Helper()
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(Model, h, CheckTimeout)
	t.Logf("porcupine: %s over %d operations in %v", res, len(h), time.Since(start).Round(time.Millisecond))
	if res == want {
		return
	}
	t.Errorf("porcupine's verdict: %s, want %s", res, want)
	f, err := os.CreateTemp("", "lore-linearizability-*.html")
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if err := porcupine.Visualize(Model, info, f); err != nil {
		t.Error(err)
	}
	t.Logf("visualization of the history: %s", f.Name())
}

// String sums h up: how many operations of each kind ended how.
func (h History) String() string {
	var n [3][3]int
	for _, op := range h {
		n[op.Input.(Call).Kind][op.Output.(Reply).Outcome]++
	}
	return fmt.Sprintf("%d operations: reads %d found, %d not found; upserts %d ok, %d conflicts; deletes %d ok, %d conflicts, %d not found",
		len(h), n[Read][OK], n[Read][NotFound], n[Upsert][OK], n[Upsert][Conflict], n[Delete][OK], n[Delete][Conflict], n[Delete][NotFound])
}
