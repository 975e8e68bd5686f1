//go:build !race

package embedding

// raceDetector says the tests run under -race, where decoding and
// resampling photos in pure Go run about twenty times slower.
const raceDetector = false
