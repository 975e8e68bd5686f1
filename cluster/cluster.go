// Package cluster provides the grouping of a project's photos: moments
// (runs of shots separated by gaps in capture time), bursts (frames seconds
// apart from one camera) and duplicate groups (perceptual hashes within a
// threshold), each ranked by quality signals with a winner and the reasons
// it won. It is pure computation over what ingest measured.
//
// # Choices
//
// Moments split where shots are more than 90 minutes apart; bursts are frames
// at most 2 s apart from one camera; duplicate groups join perceptual hashes
// at most 10 bits apart (copies measured ≤ 6 bits apart, different corpus
// photos ≥ 22). Winners are ranked by sharpness (half the score), exposure and
// resolution, and whyWinner names the signals where the winner beats every
// other member. In a moment or burst whose faces were looked for, open eyes
// and sharp faces weigh two fifths of the score (a blink or a soft face
// loses the frame), and whyWinner says eyes_open when the winner has none
// closed where another member has some, faces_in_focus when its softest face
// is sharper than every other member's.
package cluster

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Photo is what the grouping reads of one asset.
type Photo struct {
	ID         uuid.UUID
	Filename   string
	CapturedAt *time.Time
	Camera     string // make and model; bursts never mix cameras
	PHash      uint64
	Width      int
	Height     int
	Bytes      int64   // size of the original file
	Sharpness  float64 // variance of the Laplacian
	Highlights float64 // fraction of clipped highlights
	Shadows    float64 // fraction of clipped shadows
	Luminance  float64 // mean, 0 to 1
	// Judged says the judged signals below were measured: focus where
	// the photo is sharpest and motion, each 0–100, and exposure in EV.
	// When every member of a group has them they replace the Laplacian
	// and the clipping: a shallow depth of field is not soft, and a
	// smeared frame loses to the steady one.
	Judged bool
	Focus  float64
	Motion float64
	EV     float64
	// Faces is what was found of its faces; nil when they were not
	// looked for.
	Faces *Faces
}

// Faces sums up the faces of one photo.
type Faces struct {
	Count        int
	EyesClosed   int     // faces whose eyes are closed
	MinSharpness float64 // the softest face's sharpness; 0 without faces
}

// Kinds of group.
const (
	Moment    = "moment"
	Burst     = "burst"
	Duplicate = "duplicate_group"
)

// Member is one photo's place in a group.
type Member struct {
	ID      uuid.UUID
	Rank    int // 1 is the best
	Role    string
	Signals Signals
}

// Signals are the normalised scores a photo was ranked by, each 0 to 1.
type Signals struct {
	Sharpness  float64 `json:"sharpness"`
	Exposure   float64 `json:"exposure"`
	Resolution float64 `json:"resolution"`
	Fidelity   float64 `json:"fidelity"` // bytes per pixel of the original: less compression
	// EyesOpen is the share of its faces with eyes open, FacesInFocus its
	// softest face's sharpness over the sharpest such face of the group
	// (0 for a member where no face was found); both only in a group
	// whose faces were looked for.
	EyesOpen     *float64 `json:"eyesOpen,omitempty"`
	FacesInFocus *float64 `json:"facesInFocus,omitempty"`
	Score        float64  `json:"score"`
}

// Group is a moment, burst or duplicate group.
type Group struct {
	Kind      string
	Title     string
	Start     *time.Time
	End       *time.Time
	Score     float64 // the winner's score
	Winner    uuid.UUID
	WhyWinner []string
	Members   []Member
}

// Options tune the grouping.
type Options struct {
	MomentGap     time.Duration // a longer gap between shots starts a new moment
	BurstGap      time.Duration // frames at most this far apart form a burst
	DuplicateBits int           // perceptual hashes at most this many bits apart are duplicates
}

// DefaultOptions suit a day's shoot. The duplicate threshold is the one
// imaging measured on the corpus (copies ≤ 4 bits apart, different photos
// ≥ 22).
var DefaultOptions = Options{MomentGap: 90 * time.Minute, BurstGap: 2 * time.Second, DuplicateBits: 10}

// Build groups photos. Photos without a capture time join no moment or
// burst but can still be duplicates.
func Build(photos []Photo, o Options) []Group {
	var groups []Group
	dated := make([]Photo, 0, len(photos))
	for _, p := range photos {
		if p.CapturedAt != nil {
			dated = append(dated, p)
		}
	}
	slices.SortStableFunc(dated, func(a, b Photo) int { return a.CapturedAt.Compare(*b.CapturedAt) })
	for _, run := range splitRuns(dated, func(prev, next Photo) bool { return next.CapturedAt.Sub(*prev.CapturedAt) > o.MomentGap }) {
		groups = append(groups, rank(Moment, run))
	}

	byCamera := map[string][]Photo{}
	for _, p := range dated {
		byCamera[p.Camera] = append(byCamera[p.Camera], p)
	}
	cameras := make([]string, 0, len(byCamera))
	for c := range byCamera {
		cameras = append(cameras, c)
	}
	slices.Sort(cameras)
	for _, c := range cameras {
		for _, run := range splitRuns(byCamera[c], func(prev, next Photo) bool { return next.CapturedAt.Sub(*prev.CapturedAt) > o.BurstGap }) {
			if len(run) >= 2 {
				groups = append(groups, rank(Burst, run))
			}
		}
	}

	for _, set := range duplicateSets(photos, o.DuplicateBits) {
		groups = append(groups, rank(Duplicate, set))
	}
	for i := range groups {
		groups[i].Title = title(groups[i])
	}
	return groups
}

// splitRuns cuts a sorted list wherever cut says the gap is too wide.
func splitRuns(ps []Photo, cut func(prev, next Photo) bool) [][]Photo {
	var runs [][]Photo
	start := 0
	for i := 1; i <= len(ps); i++ {
		if i == len(ps) || cut(ps[i-1], ps[i]) {
			if i > start {
				runs = append(runs, ps[start:i])
			}
			start = i
		}
	}
	return runs
}

// duplicateSets joins photos whose hashes are close, transitively
// (union-find), and returns the sets of two or more in input order.
func duplicateSets(ps []Photo, maxBits int) [][]Photo {
	parent := make([]int32, len(ps))
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(i int32) int32 {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(i, j int) {
		if a, b := find(int32(i)), find(int32(j)); a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	hashes := make([]uint64, len(ps))
	for i, p := range ps {
		hashes[i] = p.PHash
	}
	closePairs(hashes, maxBits, union)
	sets := map[int32][]Photo{}
	var roots []int32
	for i, p := range ps {
		r := find(int32(i))
		if _, ok := sets[r]; !ok {
			roots = append(roots, r)
		}
		sets[r] = append(sets[r], p)
	}
	var out [][]Photo
	for _, r := range roots {
		if len(sets[r]) >= 2 {
			out = append(out, sets[r])
		}
	}
	return out
}

// closePairs calls pair(i, j), i < j, for every two hashes at most
// maxBits apart, and perhaps more than once for a pair.
//
// Comparing every pair is 5 billion popcounts for 100,000 photos, so it
// uses multi-index hashing (Norouzi, Punjani and Fleet, 2012): the hash is
// cut into four 16-bit chunks, and two hashes at most maxBits apart differ
// by at most maxBits/4 bits in one chunk at least (pigeonhole). Each hash
// looks up the buckets of its chunks within that radius (137 buckets a
// chunk for the default 10 bits) and compares only the hashes found there.
// Small inputs and wide thresholds, where the buckets would cost more
// than they save, compare every pair.
func closePairs(hashes []uint64, maxBits int, pair func(i, j int)) {
	const chunks, width = 4, 16
	radius := maxBits / chunks
	if len(hashes) < 2000 || radius > 3 {
		for i := range hashes {
			for j := i + 1; j < len(hashes); j++ {
				if bits.OnesCount64(hashes[i]^hashes[j]) <= maxBits {
					pair(i, j)
				}
			}
		}
		return
	}
	if maxBits < 0 {
		return
	}
	var masks []uint16
	for m := range 1 << width {
		if bits.OnesCount16(uint16(m)) <= radius {
			masks = append(masks, uint16(m))
		}
	}
	chunk := func(h uint64, c int) uint16 { return uint16(h >> (c * width)) }
	for c := range chunks {
		// A counting sort by chunk value: the hashes of bucket v are
		// members[start[v]:start[v+1]], in input order.
		start := make([]int32, 1<<width+1)
		for _, h := range hashes {
			start[int(chunk(h, c))+1]++
		}
		for v := 1; v < len(start); v++ {
			start[v] += start[v-1]
		}
		members := make([]int32, len(hashes))
		next := slices.Clone(start[:1<<width])
		for i, h := range hashes {
			v := chunk(h, c)
			members[next[v]] = int32(i)
			next[v]++
		}
		for i, h := range hashes {
			v := chunk(h, c)
			for _, m := range masks {
				b := int(v ^ m)
				for _, j := range members[start[b]:start[b+1]] {
					if int(j) > i && bits.OnesCount64(h^hashes[j]) <= maxBits {
						pair(i, int(j))
					}
				}
			}
		}
	}
}

// rank scores the members, names a winner and says why.
func rank(kind string, ps []Photo) Group {
	maxSharp, maxPixels, maxBPP, maxFace := 0.0, 0.0, 0.0, 0.0
	withFaces, judged := false, true
	for _, p := range ps {
		judged = judged && p.Judged
	}
	for _, p := range ps {
		maxSharp = math.Max(maxSharp, sharpness(p, judged))
		maxPixels = math.Max(maxPixels, float64(p.Width*p.Height))
		maxBPP = math.Max(maxBPP, bytesPerPixel(p))
		if p.Faces != nil && p.Faces.Count > 0 {
			withFaces = true
			maxFace = math.Max(maxFace, p.Faces.MinSharpness)
		}
	}
	// Copies of one photo have the same faces.
	withFaces = withFaces && kind != Duplicate
	type scored struct {
		p Photo
		s Signals
	}
	all := make([]scored, len(ps))
	for i, p := range ps {
		s := Signals{Sharpness: ratio(sharpness(p, judged), maxSharp), Exposure: exposure(p, judged),
			Resolution: ratio(float64(p.Width*p.Height), maxPixels), Fidelity: ratio(bytesPerPixel(p), maxBPP)}
		if kind == Duplicate {
			// Copies of one photo: keep the biggest, least compressed file.
			// Downscaling and JPEG blocking both raise the Laplacian, so
			// sharpness would favour the worse copy.
			s.Score = round3(0.6*s.Resolution + 0.3*s.Fidelity + 0.1*s.Exposure)
		} else if withFaces {
			// Frames of people: a blink or a soft face loses the frame
			// whatever the rest.
			eyes, focus := faceSignals(p, maxFace)
			s.EyesOpen, s.FacesInFocus = &eyes, &focus
			s.Score = round3(0.3*s.Sharpness + 0.2*s.Exposure + 0.1*s.Resolution + 0.2*eyes + 0.2*focus)
		} else {
			// Different frames: sharpness decides most, a blurred frame is
			// rarely the keeper.
			s.Score = round3(0.5*s.Sharpness + 0.35*s.Exposure + 0.15*s.Resolution)
		}
		s.Sharpness, s.Exposure, s.Resolution, s.Fidelity = round3(s.Sharpness), round3(s.Exposure), round3(s.Resolution), round3(s.Fidelity)
		all[i] = scored{p, s}
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.s.Score, a.s.Score), cmp.Compare(a.p.ID.String(), b.p.ID.String()))
	})
	g := Group{Kind: kind, Winner: all[0].p.ID, Score: all[0].s.Score}
	for i, m := range all {
		role := "candidate"
		if i == 0 {
			role = "winner"
		} else if kind != Moment {
			role = "alt"
		}
		g.Members = append(g.Members, Member{ID: m.p.ID, Rank: i + 1, Role: role, Signals: m.s})
		if t := m.p.CapturedAt; t != nil {
			if g.Start == nil || t.Before(*g.Start) {
				g.Start = t
			}
			if g.End == nil || t.After(*g.End) {
				g.End = t
			}
		}
	}
	others := make([]Signals, 0, len(all)-1)
	for _, m := range all[1:] {
		others = append(others, m.s)
	}
	g.WhyWinner = why(all[0].s, others)
	return g
}

// faceSignals are p's eyes open and faces in focus, the sharpest face of
// its group's softest faces being maxFace. A member where no face was
// found has no eye seen closed, and no face in focus.
func faceSignals(p Photo, maxFace float64) (eyes, focus float64) {
	if p.Faces == nil || p.Faces.Count == 0 {
		return 1, 0
	}
	eyes = 1 - float64(p.Faces.EyesClosed)/float64(p.Faces.Count)
	return round3(eyes), round3(ratio(p.Faces.MinSharpness, maxFace))
}

// why lists the signals in which the winner leads every other member.
func why(w Signals, others []Signals) []string {
	if len(others) == 0 {
		return []string{"only photo"}
	}
	sharpest, exposed, largest, faithful := true, true, true, true
	// eyes_open: none of the winner's eyes closed where another member
	// has some; faces_in_focus: its softest face leads every other's.
	eyesOpen, someClosed := w.EyesOpen != nil && *w.EyesOpen == 1, false
	facesInFocus := w.FacesInFocus != nil
	for _, o := range others {
		sharpest = sharpest && w.Sharpness > o.Sharpness
		exposed = exposed && w.Exposure > o.Exposure
		largest = largest && w.Resolution > o.Resolution
		faithful = faithful && w.Fidelity > o.Fidelity
		someClosed = someClosed || (o.EyesOpen != nil && *o.EyesOpen < 1)
		facesInFocus = facesInFocus && o.FacesInFocus != nil && *w.FacesInFocus > *o.FacesInFocus
	}
	var out []string
	if eyesOpen && someClosed {
		out = append(out, "eyes_open")
	}
	if facesInFocus {
		out = append(out, "faces_in_focus")
	}
	if sharpest {
		out = append(out, "sharpest")
	}
	if exposed {
		out = append(out, "best exposed")
	}
	if largest {
		out = append(out, "highest resolution")
	}
	if faithful {
		out = append(out, "least compressed")
	}
	if len(out) == 0 {
		out = append(out, "best overall score")
	}
	return out
}

// sharpness is the Laplacian's variance, or when judged the focus where
// the photo is sharpest less its motion: a smeared frame is not sharp
// however crisp it is across the smear.
func sharpness(p Photo, judged bool) float64 {
	if judged {
		return p.Focus * (1 - p.Motion/100)
	}
	return p.Sharpness
}

// exposure is 1 for a well exposed frame, falling with clipped highlights
// and shadows and with a mean far from mid grey; or when judged, 1 at
// 0 EV falling to 0 three EV either way.
func exposure(p Photo, judged bool) float64 {
	if judged {
		return math.Max(0, 1-math.Abs(p.EV)/3)
	}
	clip := math.Min(1, 4*(p.Highlights+p.Shadows))
	balance := 1 - math.Min(1, 2*math.Abs(p.Luminance-0.5))
	return math.Max(0, 0.6*(1-clip)+0.4*balance)
}

func bytesPerPixel(p Photo) float64 {
	if p.Width*p.Height == 0 {
		return 0
	}
	return float64(p.Bytes) / float64(p.Width*p.Height)
}

func ratio(v, max float64) float64 {
	if max <= 0 {
		return 1
	}
	return v / max
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func title(g Group) string {
	n := len(g.Members)
	switch g.Kind {
	case Moment:
		if g.Start != nil {
			return fmt.Sprintf("%s, %d photos", g.Start.UTC().Format("Mon 2 Jan 2006 15:04"), n)
		}
	case Burst:
		return fmt.Sprintf("Burst of %d", n)
	case Duplicate:
		return fmt.Sprintf("%d copies", n)
	}
	return fmt.Sprintf("%d photos", n)
}
