package graphtest

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestModel: the model accepts the histories the Store contract allows and
// refuses the others, a lost update and a stale read among them.
func TestModel(t *testing.T) {
	// op is one operation of client c from call to ret.
	op := func(c int, call, ret int64, in Call, out Reply) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret}
	}
	const k = "topic/k"
	up := func(v string, expect int64) Call { return Call{Kind: Upsert, Key: k, Value: v, Expect: expect} }
	read := Call{Kind: Read, Key: k}
	del := func(expect int64) Call { return Call{Kind: Delete, Key: k, Expect: expect} }
	at := func(v string, rev int64) Reply { return Reply{Value: v, Revision: rev} }
	ok, conflict, notFound := Reply{}, Reply{Outcome: Conflict}, Reply{Outcome: NotFound}
	for _, tt := range []struct {
		name string
		h    History
		want porcupine.CheckResult
	}{
		{"one after another", History{
			op(0, 0, 1, read, notFound),
			op(0, 2, 3, up("a", 0), at("a", 1)),
			op(0, 4, 5, up("b", 1), at("b", 2)),
			op(0, 6, 7, up("b", 2), at("b", 2)), // unchanged
			op(0, 8, 9, up("c", 1), conflict),
			op(0, 10, 11, up("c", 0), conflict),
			op(0, 12, 13, del(1), conflict),
			op(0, 14, 15, del(2), ok),
			op(0, 16, 17, del(AnyRevision), notFound),
			op(0, 18, 19, del(3), notFound),
			op(0, 20, 21, up("d", AnyRevision), at("d", 1)), // created anew at 1
			op(0, 22, 23, read, at("d", 1)),
		}, porcupine.Ok},
		{"concurrent upserts, one wins", History{
			op(0, 0, 10, up("a", 0), at("a", 1)),
			op(1, 1, 9, up("b", 0), conflict),
			op(2, 2, 3, read, notFound), // before either took effect
			op(2, 11, 12, read, at("a", 1)),
		}, porcupine.Ok},
		{"lost update: both win", History{
			op(0, 0, 10, up("a", 0), at("a", 1)),
			op(1, 1, 9, up("b", 0), at("b", 1)),
		}, porcupine.Illegal},
		{"stale read after a write returned", History{
			op(0, 0, 1, up("a", 0), at("a", 1)),
			op(0, 2, 3, up("b", 1), at("b", 2)),
			op(1, 4, 5, read, at("a", 1)),
		}, porcupine.Illegal},
		{"read goes back in time", History{
			op(0, 0, 10, up("b", AnyRevision), at("b", 1)),
			op(1, 1, 2, read, at("b", 1)),
			op(2, 3, 4, read, notFound),
		}, porcupine.Illegal},
		{"wrong revision", History{
			op(0, 0, 1, up("a", AnyRevision), at("a", 1)),
			op(0, 2, 3, up("b", AnyRevision), at("b", 3)),
		}, porcupine.Illegal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(Model, tt.h); got != (tt.want == porcupine.Ok) {
				t.Errorf("porcupine: linearizable %t, want %s", got, tt.want)
			}
		})
	}
}
