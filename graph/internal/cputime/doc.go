// Package cputime reads the CPU time of the process, for the benchmarks
// of graph/bolt and graph/pgbench (which cannot share a test helper: the
// one imports the other).
package cputime
