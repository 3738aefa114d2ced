package bolt

import (
	"sync"
	"sync/atomic"
)

// Priorities of the goroutines of a pipelined import, highest first.
const (
	turnCommit  = iota // Cayley's part of a commit: single-threaded, the load's critical path
	turnPrepare        // Lore's writes for the commit in flight, which the commit waits for
	turnPlan           // planning the next batch
	turnRead           // decoding and validating the input
	turnLevels
)

// turns shares the cores among the goroutines of a pipelined import.
// Left to the scheduler, the reader, the planner and the preparer of
// Lore's writes all run beside the commit goroutine on two cores, and
// Cayley's part of a commit took 1.5 times as long as alone: the load's
// critical path waited for a core. A goroutine takes a turn before it
// works and gives it back when it waits; a long task gives its turn up
// whenever a goroutine of higher priority is waiting (yield). A nil
// *turns lets everyone run.
type turns struct {
	mu      sync.Mutex
	free    int
	waiting [turnLevels][]chan struct{}
	wanted  atomic.Uint32 // bit p: a goroutine of priority p is waiting
}

// useTurns: pipelined imports take turns (a variable for the benchmarks).
var useTurns = true

func newTurns(cores int) *turns {
	return &turns{free: max(cores, 2)}
}

// take waits for a turn at priority p.
func (t *turns) take(p int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.free > 0 { // then nobody waits
		t.free--
		t.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	t.waiting[p] = append(t.waiting[p], ch)
	t.wanted.Store(t.wanted.Load() | 1<<p)
	t.mu.Unlock()
	<-ch // the turn is handed over by give
}

// give hands the caller's turn to the waiting goroutine of highest
// priority, or frees it.
func (t *turns) give() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for p := range t.waiting {
		if q := t.waiting[p]; len(q) > 0 {
			ch := q[0]
			t.waiting[p] = q[1:]
			if len(q) == 1 {
				t.wanted.Store(t.wanted.Load() &^ (1 << p))
			}
			close(ch)
			return
		}
	}
	t.free++
}

// yield gives the turn of a goroutine of priority p up if one of higher
// priority waits, and takes one again. It is cheap when none does.
func (t *turns) yield(p int) {
	if t == nil || t.wanted.Load()&(1<<p-1) == 0 {
		return
	}
	t.give()
	t.take(p)
}
