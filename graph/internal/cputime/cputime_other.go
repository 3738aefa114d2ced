//go:build !unix

package cputime

import "time"

// Process returns 0: benchmarks report no CPU time here.
func Process() time.Duration { return 0 }
