package uploader

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A folder's links to photos are sent as the photos, as a link named on
// the command line is; a link that leads nowhere is reported as ignored,
// not dropped without a word.
func TestScanFollowsLinksToPhotos(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	write := func(path string) {
		if err := os.WriteFile(path, []byte("bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a.jpg"))
	write(filepath.Join(dir, "notes.txt"))
	write(filepath.Join(elsewhere, "b.jpg"))
	link(filepath.Join(elsewhere, "b.jpg"), "link.jpg")
	link(filepath.Join(elsewhere, "gone.jpg"), "dangling.jpg")

	files, ignored, err := scan([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.name)
	}
	if !slices.Equal(names, []string{"a.jpg", "link.jpg"}) {
		t.Errorf("files %q, want a.jpg and link.jpg", names)
	}
	for i := range ignored {
		ignored[i] = filepath.Base(ignored[i])
	}
	slices.Sort(ignored)
	if !slices.Equal(ignored, []string{"dangling.jpg", "notes.txt"}) {
		t.Errorf("ignored %q, want dangling.jpg and notes.txt", ignored)
	}
}
