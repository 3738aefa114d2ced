//go:build race

package graph_test

// raceDetector says that the tests run under the race detector, which
// slows them several times: the slowest random tests draw fewer cases
// there (make test-race), and all of them in make test.
const raceDetector = true
