package imaging

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A labelled photo: a corpus photo as it is, or with a defect made on
// purpose, and the warning that defect should raise ("" for none).
type labelled struct {
	photo, defect, want string
	path                string
}

// defects are made with libvips from a corpus photo scaled to a 1600 px
// long edge: a defocus of σ = long edge / 400, a horizontal smear of long
// edge / 120, −3 EV and +2.5 EV in linear light, and a lens-cap frame
// (dark grey noise, no photo at all).
var defects = []struct{ name, want string }{
	{"good", ""},
	{"defocus", WarnBlurry},
	{"motion", WarnMotionBlur},
	{"under", WarnUnderexposed},
	{"over", WarnOverexposed},
	{"lenscap", WarnMisfire},
}

// labelledSet makes the set from every photo of the corpus, in a
// temporary directory, with the vips command.
func labelledSet(t *testing.T) []labelled {
	t.Helper()
	if _, err := exec.LookPath("vips"); err != nil {
		t.Fatal("the vips command is not installed (libvips-tools; make test installs it)")
	}
	dir := t.TempDir()
	names, err := filepath.Glob(filepath.Join(corpusDir(t), "photos", "*.jpg"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no corpus photos: %v", err)
	}
	const long = 1600
	motion := filepath.Join(dir, "motion.mat")
	smear := long / 120
	if err := os.WriteFile(motion, []byte(fmt.Sprintf("%d 1 %d 0\n%s\n", smear, smear, strings.TrimSpace(strings.Repeat("1 ", smear)))), 0o644); err != nil {
		t.Fatal(err)
	}
	vips := func(args ...string) {
		if out, err := exec.Command("vips", args...).CombinedOutput(); err != nil {
			t.Fatalf("vips %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var set []labelled
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, name := range names {
		photo := strings.TrimSuffix(filepath.Base(name), ".jpg")
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p := func(s string) string { return filepath.Join(dir, photo+"-"+s) }
			vips("thumbnail", name, p("good.jpg"), fmt.Sprint(long), "--size", "down")
			vips("gaussblur", p("good.jpg"), p("defocus.jpg"), fmt.Sprint(long/400))
			vips("conv", p("good.jpg"), p("motion.jpg"), motion)
			vips("colourspace", p("good.jpg"), p("lin.v"), "scrgb")
			vips("linear", p("lin.v"), p("under.v"), "0.125", "0")
			vips("colourspace", p("under.v"), p("under.jpg"), "srgb")
			vips("linear", p("lin.v"), p("over.v"), "5.657", "0")
			vips("colourspace", p("over.v"), p("over.jpg"), "srgb")
			vips("gaussnoise", p("noise.v"), fmt.Sprint(long), fmt.Sprint(long*2/3), "--mean", "6", "--sigma", "2")
			vips("cast", p("noise.v"), p("lenscap.jpg"), "uchar")
			mu.Lock()
			defer mu.Unlock()
			for _, d := range defects {
				set = append(set, labelled{photo: photo, defect: d.name, want: d.want, path: p(d.name + ".jpg")})
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(set, func(a, b labelled) int { return strings.Compare(a.photo+a.defect, b.photo+b.defect) })
	return set
}

func TestSignalsOnTheLabelledSet(t *testing.T) {
	e, err := New(EngineVips, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labelledSet(t) {
		data, err := os.ReadFile(l.path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Process(context.Background(), data, Options{})
		if err != nil {
			t.Fatalf("%s %s: %v", l.photo, l.defect, err)
		}
		q := res.Quality
		t.Logf("%-28s %-8s focus %5.1f motion %5.1f ev %5.2f lapvar %7.1f %v", l.photo, l.defect, q.Focus, q.MotionBlur, q.Exposure, q.Sharpness, q.Warnings)
	}
}
