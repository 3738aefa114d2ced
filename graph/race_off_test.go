//go:build !race

package graph_test

// raceDetector: see race_on_test.go.
const raceDetector = false
