//go:build !race

package bolt

// raceDetector: see race_on_test.go.
const raceDetector = false
