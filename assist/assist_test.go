package assist

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func sharpPhoto() Photo {
	return Photo{ID: uuid.New(), Judged: true, Focus: 70, Motion: 10, EV: 0, Detail: 0.5}
}

func TestJudgeWarnsOfEachDefectAtTheDefaults(t *testing.T) {
	mod := func(f func(*Photo)) Photo { p := sharpPhoto(); f(&p); return p }
	for _, c := range []struct {
		name string
		p    Photo
		want []string
	}{
		{"sharp", sharpPhoto(), nil},
		{"defocused", mod(func(p *Photo) { p.Focus = 10 }), []string{WarnBlurry}},
		{"smeared", mod(func(p *Photo) { p.Motion = 80 }), []string{WarnMotionBlur}},
		{"3 EV under", mod(func(p *Photo) { p.EV = -3 }), []string{WarnUnderexposed}},
		{"2 EV under", mod(func(p *Photo) { p.EV = -2 }), nil},
		{"2.5 EV over", mod(func(p *Photo) { p.EV = 2.5 }), []string{WarnOverexposed}},
		// A lens cap is a misfire, not also dark and blurred.
		{"lens cap", mod(func(p *Photo) { p.Detail, p.Focus, p.EV = 0, 0, -7 }), []string{WarnMisfire}},
		{"unjudged", Photo{ID: uuid.New()}, nil},
		{"blink", mod(func(p *Photo) { p.Faces = &Faces{Count: 1, EyesClosed: 1, MinSharpness: 200} }), []string{WarnEyesClosed}},
		{"one blink in four", mod(func(p *Photo) { p.Faces = &Faces{Count: 4, EyesClosed: 1, MinSharpness: 200} }), nil},
		{"soft face", mod(func(p *Photo) { p.Faces = &Faces{Count: 2, MinSharpness: 20} }), []string{WarnFaceSoft}},
		// A portrait 2.5 EV over: the frame's midtones (dark hair, a dark
		// backdrop) read well exposed, the faces are blown.
		{"blown faces", mod(func(p *Photo) { p.Faces = &Faces{Count: 3, MinSharpness: 60, Clipped: 0.6, ClippedRead: true} }), []string{WarnOverexposed}},
		{"bright faces", mod(func(p *Photo) { p.Faces = &Faces{Count: 3, MinSharpness: 60, Clipped: 0.2, ClippedRead: true} }), nil},
		{"over, faces blown too", mod(func(p *Photo) {
			p.EV = 2.5
			p.Faces = &Faces{Count: 1, MinSharpness: 60, Clipped: 0.9, ClippedRead: true}
		}),
			[]string{WarnOverexposed}},
		// A high-key portrait: the white backdrop reads over, the face
		// keeps its highlights.
		{"high key, face kept", mod(func(p *Photo) {
			p.EV = 2.5
			p.Faces = &Faces{Count: 1, MinSharpness: 60, Clipped: 0.01, ClippedRead: true}
		}), nil},
		{"over, faces from an older scan", mod(func(p *Photo) { p.EV = 2.5; p.Faces = &Faces{Count: 1, MinSharpness: 60} }),
			[]string{WarnOverexposed}},
	} {
		got := Warnings(c.p, Defaults())
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: warnings %v, want %v", c.name, got, c.want)
		}
		for _, r := range Judge(c.p, Defaults()) {
			if r.Message == "" {
				t.Errorf("%s: reason %s without a message", c.name, r.Code)
			}
		}
	}
}

func TestStrictnessMovesTheThresholdAndOffStopsACriterion(t *testing.T) {
	p := sharpPhoto()
	p.Focus = 30 // between the lenient and the strict threshold
	level := func(v float64) *float64 { return &v }
	if w := Warnings(p, Strictness{Blurry: level(0)}); len(w) != 0 {
		t.Errorf("lenient: %v", w)
	}
	if w := Warnings(p, Strictness{Blurry: level(1)}); !slices.Equal(w, []string{WarnBlurry}) {
		t.Errorf("strict: %v", w)
	}
	p.Focus = 1
	if w := Warnings(p, Strictness{Blurry: nil, MotionBlur: level(0.5)}); len(w) != 0 {
		t.Errorf("blurry off: %v", w)
	}
	if Threshold(Blurry, 0.5) != (focusLenient+focusStrict)/2 {
		t.Errorf("the default is not midway: %v", Threshold(Blurry, 0.5))
	}
}

func TestSuggestKeepsTheBestOfEachGroupAndLeavesHandDecisionsAlone(t *testing.T) {
	group := uuid.New()
	best, second, soft, handPicked := sharpPhoto(), sharpPhoto(), sharpPhoto(), sharpPhoto()
	best.Focus, second.Focus, soft.Focus = 90, 40, 5 // focus scores up to 60
	handPicked.Focus = 3
	for _, p := range []*Photo{&best, &second, &soft} {
		p.Group = group
	}
	alone := sharpPhoto()
	s := Suggest([]Photo{soft, second, best, handPicked, alone}, Defaults(), 1, map[uuid.UUID]Decision{handPicked.ID: {Picked: true}})
	ids := func(vs []Verdict) []uuid.UUID {
		var out []uuid.UUID
		for _, v := range vs {
			out = append(out, v.AssetID)
		}
		return out
	}
	if got := ids(s.Picks); !slices.Equal(got, []uuid.UUID{best.ID}) {
		t.Errorf("picks %v, want only the best of the group %v", got, best.ID)
	}
	rejects := ids(s.Rejects)
	if !slices.Contains(rejects, soft.ID) || !slices.Contains(rejects, second.ID) || slices.Contains(rejects, handPicked.ID) || slices.Contains(rejects, alone.ID) {
		t.Errorf("rejects %v: want the soft frame and the second best, never the hand-picked photo or the one alone", rejects)
	}
	if s.Counts.LeftAlone != 1 || s.Counts.Buckets[WarnBlurry] != 2 || s.Counts.Photos != 5 {
		t.Errorf("counts %+v", s.Counts)
	}
}

func TestLearnMovesACriterionByWhatThePhotographerKept(t *testing.T) {
	var photos []Photo
	hand := map[uuid.UUID]Decision{}
	for range 12 {
		p := sharpPhoto()
		p.Focus = 20 // called blurry at the default
		photos = append(photos, p)
		hand[p.ID] = Decision{Picked: true}
	}
	learned, adj := Learn(photos, Defaults(), hand)
	if *learned[Blurry] >= DefaultStrictness || len(adj) != 1 || adj[0].Kept != 12 {
		t.Fatalf("learned %v, adjustments %+v: want blurry more lenient for 12 kept", *learned[Blurry], adj)
	}
	if !strings.Contains(adj[0].Message, "you kept 12 photos called blurry") {
		t.Errorf("message %q", adj[0].Message)
	}
	if *learned[MotionBlur] != DefaultStrictness {
		t.Errorf("motion moved without evidence: %v", *learned[MotionBlur])
	}
	again, _ := Learn(photos, Defaults(), hand)
	if *again[Blurry] != *learned[Blurry] {
		t.Errorf("asked twice: %v then %v", *learned[Blurry], *again[Blurry])
	}
}

func TestScoreReadsTheFacesExposure(t *testing.T) {
	portrait := func(ev, clipped float64) Photo {
		p := sharpPhoto()
		p.EV = ev
		p.Faces = &Faces{Count: 1, MinSharpness: 60, Clipped: clipped, ClippedRead: true}
		return p
	}
	kept, blown := Score(portrait(0, 0.01)), Score(portrait(0, 0.8))
	if blown >= kept-10 {
		t.Errorf("a blown face scores %d, a face kept %d: want the blown one well below", blown, kept)
	}
	// High key: the frame reads +3 EV, the face keeps its highlights.
	if hk := Score(portrait(3, 0.01)); hk != kept {
		t.Errorf("a high-key portrait scores %d, the same exposed face on a plain frame %d", hk, kept)
	}
	// Faces from a scan without the clipped share: the frame alone.
	old := portrait(3, 0)
	old.Faces.ClippedRead = false
	if s := Score(old); s >= kept {
		t.Errorf("over by the frame, faces unread: score %d, want under %d", s, kept)
	}
}
