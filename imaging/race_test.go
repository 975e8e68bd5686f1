//go:build race

package imaging

// raceDetector says the tests run under -race, where the pure Go engine's
// pixel loops run about ten times slower.
const raceDetector = true
