package graph

import (
	"context"
	"time"
)

// Limits bound one read. A zero field means "the ceiling". Server ceilings
// come from configuration; a request may lower any limit and never raise
// one (Clamp).
type Limits struct {
	// MaxResults caps the nodes a read returns (and, for paths, the paths).
	MaxResults int `json:"maxResults,omitempty"`
	// MaxHops caps the edges between a start node and a result, over all
	// traversal steps together.
	MaxHops int `json:"maxHops,omitempty"`
	// MaxVisited caps the work: nodes and edges visited.
	MaxVisited int `json:"maxVisited,omitempty"`
	// TimeoutMs is the deadline, in milliseconds.
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// MaxBytes caps the size of the encoded response.
	MaxBytes int `json:"maxBytes,omitempty"`
}

// DefaultCeilings are the ceilings when configuration sets none. The work
// ceiling lets a 3-hop reverse closure of some 45,000 nodes around a hub
// (a package index's most depended-on package: about 300,000 nodes and
// edges visited) complete, with room to spare; at the embedded store's
// cost of under 1 µs per element visited, a read that uses all of it
// takes about a second, well within the timeout.
var DefaultCeilings = Limits{MaxResults: 1000, MaxHops: 6, MaxVisited: 1_000_000, TimeoutMs: 5000, MaxBytes: 1 << 20}

// Truncation reasons.
const (
	ReasonResults  = "results"
	ReasonHops     = "hops"
	ReasonWork     = "work"
	ReasonDeadline = "deadline"
	ReasonBytes    = "bytes"
)

// Clamp returns the limits a request gets under the ceilings c: each field
// is the request's if it is set and not above the ceiling, else the
// ceiling. capped names the fields where the request asked for more than
// the ceiling allows.
func (c Limits) Clamp(req Limits) (applied Limits, capped []string) {
	c = c.withDefaults()
	pick := func(name string, want, ceil int) int {
		switch {
		case want <= 0:
			return ceil
		case want > ceil:
			capped = append(capped, name)
			return ceil
		}
		return want
	}
	applied.MaxResults = pick("maxResults", req.MaxResults, c.MaxResults)
	applied.MaxHops = pick("maxHops", req.MaxHops, c.MaxHops)
	applied.MaxVisited = pick("maxVisited", req.MaxVisited, c.MaxVisited)
	applied.TimeoutMs = pick("timeoutMs", req.TimeoutMs, c.TimeoutMs)
	applied.MaxBytes = pick("maxBytes", req.MaxBytes, c.MaxBytes)
	return applied, capped
}

func (c Limits) withDefaults() Limits {
	d := DefaultCeilings
	if c.MaxResults > 0 {
		d.MaxResults = c.MaxResults
	}
	if c.MaxHops > 0 {
		d.MaxHops = c.MaxHops
	}
	if c.MaxVisited > 0 {
		d.MaxVisited = c.MaxVisited
	}
	if c.TimeoutMs > 0 {
		d.TimeoutMs = c.TimeoutMs
	}
	if c.MaxBytes > 0 {
		d.MaxBytes = c.MaxBytes
	}
	return d
}

// A budget enforces Limits inside an executor's own loop: Cayley checks a
// context only between results, so a deadline is checked here after every
// bounded primitive call, and work is counted here.
type budget struct {
	ctx     context.Context
	cancel  context.CancelFunc
	limits  Limits
	visited int
	reason  string // the first bound hit, "" while none
}

func newBudget(ctx context.Context, l Limits) *budget {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(l.TimeoutMs)*time.Millisecond)
	return &budget{ctx: ctx, cancel: cancel, limits: l}
}

// stop records why execution stops, keeping the first reason.
func (b *budget) stop(reason string) {
	if b.reason == "" {
		b.reason = reason
	}
}

// ok reports whether execution may go on: no bound hit, the deadline not
// passed. It also catches a cancelled parent context.
func (b *budget) ok() bool {
	if b.reason != "" {
		return false
	}
	if b.ctx.Err() != nil {
		b.stop(ReasonDeadline)
		return false
	}
	return true
}

// spend counts n units of work and reports whether the budget allows them.
func (b *budget) spend(n int) bool {
	if !b.ok() {
		return false
	}
	if b.visited+n > b.limits.MaxVisited {
		b.stop(ReasonWork)
		return false
	}
	b.visited += n
	return true
}

// remaining returns how much work is left.
func (b *budget) remaining() int { return b.limits.MaxVisited - b.visited }
