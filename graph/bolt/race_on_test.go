//go:build race

package bolt

// raceDetector says that the tests run under the race detector, which
// slows them several times: the slowest random tests draw fewer cases.
const raceDetector = true
