package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RawPlusJPEG writes into dir what a camera set to RAW+JPEG writes for one
// shot: the shared Canon CRW as IMG_0042.CRW, and beside it the JPEG the
// camera embedded in it as IMG_0042.JPG, given the raw's capture time
// (the embedded JPEG carries none). It returns both paths.
func RawPlusJPEG(t testing.TB, dir string) (raw, jpeg string) {
	t.Helper()
	exiftool, err := exec.LookPath("exiftool")
	if err != nil {
		t.Fatal("exiftool is not installed (libimage-exiftool-perl; make test installs it)")
	}
	raw, jpeg = filepath.Join(dir, "IMG_0042.CRW"), filepath.Join(dir, "IMG_0042.JPG")
	data, err := os.ReadFile(filepath.Join(Formats(t), "raw", "canon-eos-d30.crw"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		t.Fatal(err)
	}
	embedded, err := exec.Command(exiftool, "-b", "-JpgFromRaw", raw).Output()
	if err != nil || len(embedded) == 0 {
		t.Fatalf("exiftool -b -JpgFromRaw: %v (%d bytes)", err, len(embedded))
	}
	if err := os.WriteFile(jpeg, embedded, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(exiftool, "-q", "-overwrite_original", "-DateTimeOriginal=2018:01:01 13:03:32", jpeg).CombinedOutput(); err != nil {
		t.Fatalf("exiftool -DateTimeOriginal: %v\n%s", err, out)
	}
	return raw, jpeg
}
