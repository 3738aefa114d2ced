package graph

import (
	"context"
	"sync/atomic"
)

// A SeqFloor is the newest change-log sequence number a client has written
// (or has been told of): the least a read made for that client must see.
// It serves read-your-writes on stores whose reads may lag their writes,
// such as a PostgreSQL store reading from a hot standby: a surface keeps
// one per client session (or builds one per request from what the client
// sends), puts it in the context of the client's calls with WithSeqFloor,
// and a store raises it after each write it commits (RaiseMinSeq) and
// makes each read see at least MinSeq(ctx). Stores whose reads always see
// every commit ignore it. Safe for concurrent use; the zero value is 0.
type SeqFloor struct{ seq atomic.Uint64 }

// Raise raises the floor to seq if seq is newer.
func (f *SeqFloor) Raise(seq uint64) {
	for {
		old := f.seq.Load()
		if seq <= old || f.seq.CompareAndSwap(old, seq) {
			return
		}
	}
}

// Seq returns the floor.
func (f *SeqFloor) Seq() uint64 { return f.seq.Load() }

type seqFloorKey struct{}

// WithSeqFloor returns a context that carries f: reads made with it see at
// least f.Seq(), and writes committed with it raise f.
func WithSeqFloor(ctx context.Context, f *SeqFloor) context.Context {
	return context.WithValue(ctx, seqFloorKey{}, f)
}

// SeqFloorFrom returns the floor ctx carries, or nil.
func SeqFloorFrom(ctx context.Context) *SeqFloor {
	f, _ := ctx.Value(seqFloorKey{}).(*SeqFloor)
	return f
}

// WithMinSeq returns a context whose reads see at least change-log entry
// seq: ctx's floor raised to seq if it carries one (the session's floor
// then includes seq too), else a new floor at seq.
func WithMinSeq(ctx context.Context, seq uint64) context.Context {
	if f := SeqFloorFrom(ctx); f != nil {
		f.Raise(seq)
		return ctx
	}
	f := new(SeqFloor)
	f.Raise(seq)
	return WithSeqFloor(ctx, f)
}

// MinSeq returns the least sequence number reads made with ctx must see:
// its floor, or 0.
func MinSeq(ctx context.Context) uint64 {
	if f := SeqFloorFrom(ctx); f != nil {
		return f.Seq()
	}
	return 0
}

// RaiseMinSeq raises the floor ctx carries, if any, to seq: a store calls
// it when a write made with ctx commits as change-log entry seq.
func RaiseMinSeq(ctx context.Context, seq uint64) {
	if f := SeqFloorFrom(ctx); f != nil {
		f.Raise(seq)
	}
}
