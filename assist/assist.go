// Package assist provides assisted culling: it judges a photo's signals
// (focus, motion blur, exposure, detail, faces) against a strictness per
// criterion, says why in words, scores keepers, and suggests which photos
// to reject and which to pick, best first in each burst or duplicate group.
//
// It reads numbers only (no pixels, no database), so a suggestion over a
// whole project is computed in memory in milliseconds and can be asked
// again each time a slider moves.
package assist

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/google/uuid"
)

// Criteria a photographer can tune, by the name the API uses.
const (
	Blurry     = "blurry"
	MotionBlur = "motionBlur"
	Exposure   = "exposure"
	Misfire    = "misfire"
	EyesClosed = "eyesClosed"
	FaceSoft   = "faceSoft"
)

// Criteria lists them in the order they are shown.
var Criteria = []string{Blurry, MotionBlur, Exposure, Misfire, EyesClosed, FaceSoft}

// Warning codes, as Asset.quality.warnings and reasons carry them.
const (
	WarnBlurry       = "blurry"
	WarnMotionBlur   = "motion_blur"
	WarnUnderexposed = "underexposed"
	WarnOverexposed  = "overexposed"
	WarnMisfire      = "misfire"
	WarnEyesClosed   = "eyes_closed"
	WarnFaceSoft     = "face_soft"
)

// WarningCodes lists every warning code, in the order they are shown.
var WarningCodes = []string{WarnBlurry, WarnMotionBlur, WarnUnderexposed, WarnOverexposed, WarnMisfire, WarnEyesClosed, WarnFaceSoft}

// DefaultStrictness is where every criterion starts: the thresholds
// measured on the labelled set (docs/benchmarks.md).
const DefaultStrictness = 0.5

// Strictness is how strict each criterion is, 0 (only the worst) to 1
// (the least doubt); a criterion that is absent or nil is off.
type Strictness map[string]*float64

// Defaults is every criterion at DefaultStrictness.
func Defaults() Strictness {
	s := Strictness{}
	for _, c := range Criteria {
		v := DefaultStrictness
		s[c] = &v
	}
	return s
}

// Photo is what a judgement reads of one asset.
type Photo struct {
	ID uuid.UUID
	// Judged is false for a photo ingested before the signals existed:
	// it has no focus, motion, exposure or detail reading and is never
	// warned of them (a project:signals run fills them in).
	Judged bool
	// Focus is 0–100, how sharp the photo is where it is sharpest.
	Focus float64
	// Motion is 0–100, how much sharper its subject is across one
	// direction than along it.
	Motion float64
	// EV is the exposure's offset from a well exposed frame.
	EV float64
	// Detail is the share of the frame with any detail, 0–1: near 0 for a
	// lens cap or a frame of blank ground.
	Detail float64
	// Faces is nil when faces were not looked for.
	Faces *Faces
	// Group is the burst or duplicate group the photo belongs to, if any.
	Group uuid.UUID
}

// Faces sums up one photo's faces.
type Faces struct {
	Count      int
	EyesClosed int
	// MinSharpness is the softest face's sharpness (faces.Face.Sharpness).
	MinSharpness float64
	// Clipped is the middle face's share of clipped pixels
	// (faces.Clipped), 0–1, when ClippedRead (scans from before it was
	// measured have none).
	Clipped     float64
	ClippedRead bool
}

// keptHighlights reports whether faces were found and the middle one
// keeps its highlights: a portrait exposed for the face, however much of
// a white backdrop or a window is blown.
func (f *Faces) keptHighlights() bool {
	return f != nil && f.Count > 0 && f.ClippedRead && f.Clipped < faceKept
}

// Reason is one judgement in words: a warning code (or a pick's reason)
// and what it read.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// thresholds at strictness 0 (lenient) and 1 (strict); a criterion's
// threshold moves linearly between them, and DefaultStrictness gives the
// measured one. Signals below (or for over-exposure and motion, above)
// the threshold are warned of.
var thresholds = map[string]struct{ lenient, strict float64 }{
	Blurry:     {focusLenient, focusStrict},
	MotionBlur: {motionLenient, motionStrict},
	Misfire:    {detailLenient, detailStrict},
	FaceSoft:   {faceLenient, faceStrict},
	// Exposure's thresholds are offsets in EV each side of 0.
	Exposure: {evLenient, evStrict},
	// EyesClosed: the share of a photo's faces that blink.
	EyesClosed: {1, 0},
}

// Calibrated thresholds (see docs/benchmarks.md for the labelled set and
// the figures they were chosen from): the defaults sit midway.
const (
	focusLenient, focusStrict   = 12, 38 // focus under this is blurred
	motionLenient, motionStrict = 75, 25 // motion over this is a smear
	detailLenient, detailStrict = 0.001, 0.009
	faceLenient, faceStrict     = 16, 32 // faces.SoftBelow is 24
	evLenient, evStrict         = 2.8, 0.8
	// A blown face: the middle face's clipped share over this is
	// overexposed, at the exposure strictness's ends.
	faceClipLenient, faceClipStrict = 0.5, 0.1
	// Under this share clipped the middle face keeps its highlights, and
	// a frame read as over is a bright backdrop (high key), not a blown
	// photo: faces 2.5 EV over had 0.31 and more clipped on the labelled
	// people sets, faces as taken in bright high-key frames 0.01.
	faceKept = 0.1
)

// underMargin widens the underexposure threshold past the over one: a
// dark frame is more often meant than a blown one.
const underMargin = 0.4

// Threshold is criterion c's threshold at strictness s.
func Threshold(c string, s float64) float64 {
	t := thresholds[c]
	return between(t.lenient, t.strict, s)
}

// between is the threshold at strictness s (clamped to 0–1) of one that
// runs from lenient at 0 to strict at 1.
func between(lenient, strict, s float64) float64 {
	return lenient + (strict-lenient)*clamp01(s)
}

// Judge lists the warnings p earns under s, with why.
func Judge(p Photo, s Strictness) []Reason {
	var out []Reason
	on := func(c string) (float64, bool) {
		v, ok := s[c]
		if !ok || v == nil {
			return 0, false
		}
		return *v, true
	}
	if p.Judged {
		misfire := false
		if v, ok := on(Misfire); ok {
			if t := Threshold(Misfire, v); p.Detail < t {
				misfire = true
				out = append(out, Reason{WarnMisfire, fmt.Sprintf("nothing photographed: detail in %.1f%% of the frame, under %.1f%%", 100*p.Detail, 100*t)})
			}
		}
		if v, ok := on(Exposure); ok && !misfire {
			t := Threshold(Exposure, v)
			switch {
			case p.EV < -(t + underMargin):
				out = append(out, Reason{WarnUnderexposed, fmt.Sprintf("underexposed by %.1f EV (warned under −%.1f)", -p.EV, t+underMargin)})
			case p.EV > t && !p.Faces.keptHighlights():
				out = append(out, Reason{WarnOverexposed, fmt.Sprintf("overexposed by %.1f EV (warned over +%.1f)", p.EV, t)})
			}
		}
		// A frame with nothing in it is not also blurred or dark.
		if !misfire {
			if v, ok := on(Blurry); ok {
				if t := Threshold(Blurry, v); p.Focus < t {
					out = append(out, Reason{WarnBlurry, fmt.Sprintf("soft everywhere: focus %.0f, under %.0f", p.Focus, t)})
				}
			}
			if v, ok := on(MotionBlur); ok {
				if t := Threshold(MotionBlur, v); p.Motion > t {
					out = append(out, Reason{WarnMotionBlur, fmt.Sprintf("smeared in one direction: motion %.0f, over %.0f", p.Motion, t)})
				}
			}
		}
	}
	if f := p.Faces; f != nil && f.Count > 0 {
		// Faces blown white are an overexposed photo, whatever the frame's
		// midtones read (a portrait's dark hair and backdrop keep them).
		if v, ok := on(Exposure); ok && !slices.ContainsFunc(out, func(r Reason) bool {
			return r.Code == WarnOverexposed || r.Code == WarnMisfire
		}) {
			if t := between(faceClipLenient, faceClipStrict, v); f.ClippedRead && f.Clipped > t {
				out = append(out, Reason{WarnOverexposed, fmt.Sprintf("faces blown: %.0f%% of the middle face clipped (warned over %.0f%%)", 100*f.Clipped, 100*t)})
			}
		}
		if v, ok := on(EyesClosed); ok && f.EyesClosed > 0 {
			share := float64(f.EyesClosed) / float64(f.Count)
			// At strictness 1 one blink in a crowd is enough; at 0 every
			// face must blink.
			if t := Threshold(EyesClosed, v); share >= t || v >= 1 {
				out = append(out, Reason{WarnEyesClosed, fmt.Sprintf("eyes closed on %d of %d faces", f.EyesClosed, f.Count)})
			}
		}
		if v, ok := on(FaceSoft); ok {
			if t := Threshold(FaceSoft, v); f.MinSharpness < t {
				out = append(out, Reason{WarnFaceSoft, fmt.Sprintf("a face is soft: sharpness %.0f, under %.0f", f.MinSharpness, t)})
			}
		}
	}
	return out
}

// Warnings are the codes of Judge's reasons.
func Warnings(p Photo, s Strictness) []string {
	var out []string
	for _, r := range Judge(p, s) {
		out = append(out, r.Code)
	}
	return out
}

// Score is p's keeper score, 0–100: focus, steadiness and exposure (the
// faces' too, where their clipped share was read), and eyes open and
// faces sharp where faces were looked for. A photo that is
// not judged scores 50 on the signals it lacks.
func Score(p Photo) int {
	focus, steady, exposure := 0.5, 0.5, 0.5
	if p.Judged {
		focus = clamp01(p.Focus / 60)
		steady = 1 - clamp01(p.Motion/100)
		exposure = 1 - clamp01(math.Abs(p.EV)/3)
		if p.Detail < detailStrict {
			return int(math.Round(100 * 0.1 * clamp01(p.Detail/detailStrict)))
		}
	}
	if f := p.Faces; f != nil && f.Count > 0 && f.ClippedRead {
		faces := 1 - clamp01(f.Clipped/0.5)
		if f.keptHighlights() && p.EV > 0 {
			exposure = faces // a bright backdrop behind faces exposed right
		} else {
			exposure = min(exposure, faces)
		}
	}
	score := 0.45*focus + 0.25*steady + 0.3*exposure
	if f := p.Faces; f != nil && f.Count > 0 {
		eyes := 1 - float64(f.EyesClosed)/float64(f.Count)
		sharp := clamp01(f.MinSharpness / 100)
		score = 0.6*score + 0.25*eyes + 0.15*sharp
	}
	return int(math.Round(100 * score))
}

func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// Decision is what the photographer decided of a photo by hand, which the
// assistant never overrides.
type Decision struct {
	Picked, Rejected bool
}

// Verdict is one suggested reject or pick.
type Verdict struct {
	AssetID uuid.UUID `json:"assetId"`
	Score   int       `json:"score"`
	Reasons []Reason  `json:"reasons"`
}

// Suggestion is Suggest's answer.
type Suggestion struct {
	Rejects []Verdict `json:"rejects"`
	Picks   []Verdict `json:"picks"`
	Counts  Counts    `json:"counts"`
}

// Counts sum a suggestion up.
type Counts struct {
	Photos  int `json:"photos"`
	Rejects int `json:"rejects"`
	Picks   int `json:"picks"`
	// LeftAlone counts the photos the photographer decided by hand.
	LeftAlone int `json:"leftAlone"`
	// Unjudged counts photos without signals yet (ingested before them).
	Unjudged int `json:"unjudged"`
	// Buckets counts the photos warned of each warning code (every code,
	// 0 included), hand-decided ones included, as the app's filters show
	// them.
	Buckets map[string]int `json:"buckets"`
}

// Suggest judges photos under s. Photos with warnings are rejected, unless
// decided by hand (hand maps them). With keepPerGroup > 0 the best
// keepPerGroup photos of each group (by Score, warnings last) are picked
// and the rest of the group rejected as "not among the best".
func Suggest(photos []Photo, s Strictness, keepPerGroup int, hand map[uuid.UUID]Decision) Suggestion {
	sg := Suggestion{Rejects: []Verdict{}, Picks: []Verdict{}, Counts: Counts{Photos: len(photos), Buckets: map[string]int{}}}
	for _, code := range WarningCodes {
		sg.Counts.Buckets[code] = 0
	}
	type judged struct {
		p       Photo
		reasons []Reason
		score   int
	}
	all := make([]judged, len(photos))
	groups := map[uuid.UUID][]int{}
	for i, p := range photos {
		all[i] = judged{p, Judge(p, s), Score(p)}
		for _, r := range all[i].reasons {
			sg.Counts.Buckets[r.Code]++
		}
		if !p.Judged {
			sg.Counts.Unjudged++
		}
		if p.Group != uuid.Nil {
			groups[p.Group] = append(groups[p.Group], i)
		}
	}
	picked := map[int][]Reason{}
	notBest := map[int]Reason{}
	if keepPerGroup > 0 {
		for _, members := range groups {
			slices.SortFunc(members, func(a, b int) int {
				wa, wb := len(all[a].reasons) > 0, len(all[b].reasons) > 0
				if wa != wb {
					if wa {
						return 1
					}
					return -1
				}
				return cmp.Or(cmp.Compare(all[b].score, all[a].score), cmp.Compare(all[a].p.ID.String(), all[b].p.ID.String()))
			})
			for rank, i := range members {
				switch {
				case rank < keepPerGroup && len(all[i].reasons) == 0:
					picked[i] = []Reason{{"best_of_group", fmt.Sprintf("best %d of %d in its group (score %d)", rank+1, len(members), all[i].score)}}
				case rank >= keepPerGroup:
					notBest[i] = Reason{"not_best_of_group", fmt.Sprintf("ranked %d of %d in its group (score %d)", rank+1, len(members), all[i].score)}
				}
			}
		}
	}
	for i, j := range all {
		if _, ok := hand[j.p.ID]; ok {
			sg.Counts.LeftAlone++
			continue
		}
		reasons := j.reasons
		if r, ok := notBest[i]; ok {
			reasons = append(slices.Clip(reasons), r)
		}
		switch {
		case len(reasons) > 0:
			sg.Rejects = append(sg.Rejects, Verdict{j.p.ID, j.score, reasons})
		case picked[i] != nil:
			sg.Picks = append(sg.Picks, Verdict{j.p.ID, j.score, picked[i]})
		}
	}
	sg.Counts.Rejects, sg.Counts.Picks = len(sg.Rejects), len(sg.Picks)
	return sg
}

// Adjustment is one criterion's strictness moved by what the photographer
// did, in words.
type Adjustment struct {
	Criterion string  `json:"criterion"`
	From      float64 `json:"from"`
	To        float64 `json:"to"`
	// Kept counts photos the criterion warned of that were picked by
	// hand; Rejected photos rejected by hand that it let through but a
	// stricter setting would have caught.
	Kept     int    `json:"kept"`
	Rejected int    `json:"rejected"`
	Message  string `json:"message"`
}

// learnReach is how much stricter a criterion would have had to be to
// catch a photo rejected by hand for it to count against that criterion.
const learnReach = 0.25

// Learn moves each criterion of s by the photographer's own decisions on
// photos: picking photos a criterion warns of makes it more lenient,
// rejecting photos it let through (that it would have caught a little
// stricter) makes it stricter. The move grows with the evidence and
// levels off, a quarter at most, in steps of 0.05, so a few decisions
// nudge and many decide. It is computed from the decisions as they are,
// not accumulated, so asking twice gives the same answer.
func Learn(photos []Photo, s Strictness, hand map[uuid.UUID]Decision) (Strictness, []Adjustment) {
	out := Strictness{}
	var adj []Adjustment
	for _, c := range Criteria {
		v, ok := s[c]
		if !ok || v == nil {
			out[c] = nil
			continue
		}
		only := func(level float64) Strictness { return Strictness{c: &level} }
		kept, rejected := 0, 0
		for _, p := range photos {
			d, ok := hand[p.ID]
			if !ok {
				continue
			}
			switch {
			case d.Picked && len(Judge(p, only(*v))) > 0:
				kept++
			case d.Rejected && len(Judge(p, s)) == 0 && len(Judge(p, only(math.Min(1, *v+learnReach)))) > 0:
				rejected++
			}
		}
		to := *v
		if net := rejected - kept; net != 0 {
			move := learnReach * float64(net) / float64(abs(net)+4)
			to = math.Round(clamp01(*v+move)*20) / 20
		}
		out[c] = &to
		if to != *v {
			adj = append(adj, Adjustment{Criterion: c, From: *v, To: to, Kept: kept, Rejected: rejected, Message: learnMessage(c, *v, to, kept, rejected)})
		}
	}
	return out, adj
}

func learnMessage(c string, from, to float64, kept, rejected int) string {
	called := map[string]string{Blurry: "blurry", MotionBlur: "motion-blurred", Exposure: "badly exposed",
		Misfire: "misfires", EyesClosed: "blinking", FaceSoft: "soft-faced"}[c]
	var why string
	switch {
	case kept > 0 && rejected > 0:
		why = fmt.Sprintf("you kept %d photos called %s and rejected %d it let through", kept, called, rejected)
	case kept > 0:
		why = fmt.Sprintf("you kept %d photos called %s", kept, called)
	default:
		why = fmt.Sprintf("you rejected %d photos it did not call %s", rejected, called)
	}
	return fmt.Sprintf("%s: %s strictness %.2f → %.2f", why, c, from, to)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// FromQuality reads the signals of an asset's stored quality JSON
// (imaging.Quality) into a Photo with id; a quality from before the
// signals (no "detail") leaves the photo unjudged.
func FromQuality(id uuid.UUID, quality []byte) Photo {
	var q struct {
		Focus      float64  `json:"focus"`
		MotionBlur float64  `json:"motionBlur"`
		Exposure   float64  `json:"exposure"`
		Detail     *float64 `json:"detail"`
	}
	p := Photo{ID: id}
	if json.Unmarshal(quality, &q) != nil || q.Detail == nil {
		return p
	}
	p.Judged, p.Focus, p.Motion, p.EV, p.Detail = true, q.Focus, q.MotionBlur, q.Exposure, *q.Detail
	return p
}
