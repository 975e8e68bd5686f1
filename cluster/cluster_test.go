package cluster_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/cluster"
)

func at(t0 time.Time, d time.Duration) *time.Time { t := t0.Add(d); return &t }

func photo(t *time.Time, camera string, hash uint64, sharp float64) cluster.Photo {
	return cluster.Photo{ID: uuid.New(), CapturedAt: t, Camera: camera, PHash: hash, Width: 4000, Height: 3000,
		Sharpness: sharp, Luminance: 0.5}
}

func byKind(gs []cluster.Group, kind string) []cluster.Group {
	var out []cluster.Group
	for _, g := range gs {
		if g.Kind == kind {
			out = append(out, g)
		}
	}
	return out
}

func TestMomentsSplitOnGaps(t *testing.T) {
	t0 := time.Date(2026, 6, 21, 14, 0, 0, 0, time.UTC)
	ps := []cluster.Photo{
		photo(at(t0, 0), "A", 0x0f, 100),
		photo(at(t0, 20*time.Minute), "A", 0xf0f0, 100),
		photo(at(t0, 5*time.Hour), "A", 0xff00ff, 100), // after a long lunch
		photo(nil, "A", 0xffff0000ffff, 100),           // undated: in no moment
	}
	moments := byKind(cluster.Build(ps, cluster.DefaultOptions), cluster.Moment)
	if len(moments) != 2 || len(moments[0].Members) != 2 || len(moments[1].Members) != 1 {
		t.Fatalf("moments %+v", moments)
	}
	if !moments[0].Start.Equal(t0) || !moments[0].End.Equal(t0.Add(20*time.Minute)) {
		t.Fatalf("moment span %v–%v", moments[0].Start, moments[0].End)
	}
}

func TestBurstsNeedOneCameraAndSecondsApart(t *testing.T) {
	t0 := time.Date(2026, 6, 21, 14, 0, 0, 0, time.UTC)
	blurred := photo(at(t0, 0), "Canon", 1, 20)
	sharp := photo(at(t0, 500*time.Millisecond), "Canon", 1<<20, 400)
	third := photo(at(t0, 1500*time.Millisecond), "Canon", 1<<40, 150)
	other := photo(at(t0, 700*time.Millisecond), "Nikon", 1<<60, 900) // another shooter at the same instant
	late := photo(at(t0, 10*time.Second), "Canon", 3<<30, 900)
	bursts := byKind(cluster.Build([]cluster.Photo{blurred, sharp, third, other, late}, cluster.DefaultOptions), cluster.Burst)
	if len(bursts) != 1 || len(bursts[0].Members) != 3 {
		t.Fatalf("bursts %+v", bursts)
	}
	b := bursts[0]
	if b.Winner != sharp.ID || b.Members[0].Role != "winner" || b.Members[1].Role != "alt" || b.Members[2].ID != blurred.ID {
		t.Fatalf("burst ranking %+v", b.Members)
	}
	if len(b.WhyWinner) == 0 || b.WhyWinner[0] != "sharpest" {
		t.Fatalf("whyWinner %v", b.WhyWinner)
	}
}

func TestDuplicateGroupsByHashDistance(t *testing.T) {
	base := uint64(0xA5A5_5A5A_F0F0_0F0F)
	orig := photo(nil, "", base, 300)
	small := photo(nil, "", base^0b1011, 250) // 3 bits off: a resized copy
	small.Width, small.Height = 1000, 750
	other := photo(nil, "", ^base, 300) // far away: another photo
	dups := byKind(cluster.Build([]cluster.Photo{orig, small, other}, cluster.DefaultOptions), cluster.Duplicate)
	if len(dups) != 1 || len(dups[0].Members) != 2 || dups[0].Winner != orig.ID {
		t.Fatalf("duplicate groups %+v", dups)
	}
	why := dups[0].WhyWinner
	if len(why) != 2 || why[0] != "sharpest" || why[1] != "highest resolution" {
		t.Fatalf("whyWinner %v", why)
	}
}

func TestExposureBreaksTies(t *testing.T) {
	t0 := time.Date(2026, 6, 21, 14, 0, 0, 0, time.UTC)
	dark := photo(at(t0, 0), "A", 1, 200)
	dark.Luminance, dark.Shadows = 0.1, 0.2
	good := photo(at(t0, time.Second), "A", 1<<50, 200)
	g := byKind(cluster.Build([]cluster.Photo{dark, good}, cluster.DefaultOptions), cluster.Burst)[0]
	if g.Winner != good.ID || len(g.WhyWinner) != 1 || g.WhyWinner[0] != "best exposed" {
		t.Fatalf("winner %v why %v", g.Winner == good.ID, g.WhyWinner)
	}
}

func TestTheLeastCompressedCopyWinsADuplicateGroup(t *testing.T) {
	orig := photo(nil, "", 42, 200)
	orig.Bytes = 4_000_000
	rough := photo(nil, "", 43, 320) // blocking artefacts read as sharpness
	rough.Bytes = 600_000
	g := byKind(cluster.Build([]cluster.Photo{rough, orig}, cluster.DefaultOptions), cluster.Duplicate)[0]
	if g.Winner != orig.ID || len(g.WhyWinner) != 1 || g.WhyWinner[0] != "least compressed" {
		t.Fatalf("winner is the original: %v, why %v", g.Winner == orig.ID, g.WhyWinner)
	}
}

func TestBurstWinnersPreferOpenEyesAndSharpFaces(t *testing.T) {
	t0 := time.Date(2026, 6, 21, 14, 0, 0, 0, time.UTC)
	// The sharpest frame overall is the one where somebody blinked.
	blink := photo(at(t0, 0), "Canon", 1, 420)
	blink.Faces = &cluster.Faces{Count: 2, EyesClosed: 1, MinSharpness: 230}
	open := photo(at(t0, 400*time.Millisecond), "Canon", 1<<20, 380)
	open.Faces = &cluster.Faces{Count: 2, MinSharpness: 220}
	soft := photo(at(t0, 800*time.Millisecond), "Canon", 1<<40, 400)
	soft.Faces = &cluster.Faces{Count: 2, MinSharpness: 40}
	bursts := byKind(cluster.Build([]cluster.Photo{blink, open, soft}, cluster.DefaultOptions), cluster.Burst)
	if len(bursts) != 1 {
		t.Fatalf("bursts %+v", bursts)
	}
	b := bursts[0]
	if b.Winner != open.ID || len(b.WhyWinner) == 0 || b.WhyWinner[0] != "eyes_open" {
		t.Fatalf("winner %v (open is %v), why %v, members %+v", b.Winner, open.ID, b.WhyWinner, b.Members)
	}
	if s := b.Members[0].Signals; s.EyesOpen == nil || *s.EyesOpen != 1 || s.FacesInFocus == nil {
		t.Fatalf("winner's signals %+v", s)
	}

	// Eyes open everywhere: the sharp faces win, and say so, against a
	// frame sharper as a whole whose focus missed the faces.
	blink.Faces.EyesClosed = 0
	blink.Faces.MinSharpness = 120
	bursts = byKind(cluster.Build([]cluster.Photo{blink, open, soft}, cluster.DefaultOptions), cluster.Burst)
	if b := bursts[0]; b.Winner != open.ID || !slices.Contains(b.WhyWinner, "faces_in_focus") || slices.Contains(b.WhyWinner, "eyes_open") {
		t.Fatalf("winner %v (open is %v), why %v", b.Winner, open.ID, b.WhyWinner)
	}

	// Faces not looked for: ranked as before, without face signals.
	blink.Faces, open.Faces, soft.Faces = nil, nil, nil
	b = byKind(cluster.Build([]cluster.Photo{blink, open, soft}, cluster.DefaultOptions), cluster.Burst)[0]
	if b.Winner != blink.ID || b.Members[0].Signals.EyesOpen != nil || slices.Contains(b.WhyWinner, "faces_in_focus") {
		t.Fatalf("without faces: winner %v, why %v, signals %+v", b.Winner, b.WhyWinner, b.Members[0].Signals)
	}
}
