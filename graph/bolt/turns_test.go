package bolt

import (
	"runtime"
	"slices"
	"testing"
)

// waitWanted spins until a goroutine of priority p waits for a turn.
func waitWanted(tn *turns, p int) {
	for tn.wanted.Load()&(1<<p) == 0 {
		runtime.Gosched()
	}
}

// waitFree spins until n turns are free.
func waitFree(tn *turns, n int) {
	for {
		tn.mu.Lock()
		free := tn.free
		tn.mu.Unlock()
		if free == n {
			return
		}
		runtime.Gosched()
	}
}

// Turns go to the waiting goroutine of highest priority first, whatever
// the order they came in.
func TestTurnsServeHigherPriorityFirst(t *testing.T) {
	tn := newTurns(2)
	tn.take(turnRead)
	tn.take(turnRead) // both turns held
	got := make(chan int, 3)
	for _, p := range []int{turnRead, turnPlan, turnCommit} {
		go func() {
			tn.take(p)
			got <- p
			tn.give()
		}()
		waitWanted(tn, p)
	}
	tn.give() // one turn, passed on by each goroutine when it is done
	order := []int{<-got, <-got, <-got}
	if want := []int{turnCommit, turnPlan, turnRead}; !slices.Equal(order, want) {
		t.Errorf("turns went to %v, want %v", order, want)
	}
	tn.give()
	waitFree(tn, 2)
	checkAllFree(t, tn)
}

func checkAllFree(t *testing.T, tn *turns) {
	t.Helper()
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if tn.free != 2 || tn.wanted.Load() != 0 {
		t.Errorf("after all turns are given back: free %d, wanted %b", tn.free, tn.wanted.Load())
	}
}

// A goroutine that yields gives its turn up only to a higher priority,
// and gets one back before the lower priorities waiting.
func TestTurnsYieldToHigherPriority(t *testing.T) {
	tn := newTurns(2)
	tn.take(turnPlan)
	tn.take(turnPlan) // both turns held
	got := make(chan int, 2)
	go func() {
		tn.take(turnRead)
		got <- turnRead
		tn.give()
	}()
	waitWanted(tn, turnRead)
	tn.yield(turnPlan) // only a reader waits: keeps the turn
	go func() {
		tn.take(turnCommit)
		got <- turnCommit
		tn.give()
	}()
	waitWanted(tn, turnCommit)
	tn.yield(turnPlan) // to the commit goroutine, then back before the reader
	if p := <-got; p != turnCommit {
		t.Fatalf("the yielded turn went to %d", p)
	}
	select {
	case p := <-got:
		t.Fatalf("priority %d ran while the planner held both turns", p)
	default:
	}
	tn.give()
	tn.give()
	if p := <-got; p != turnRead {
		t.Fatalf("then %d", p)
	}
	waitFree(tn, 2)
	checkAllFree(t, tn)
}
