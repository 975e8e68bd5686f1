package app

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"lightbox/assist"
	"lightbox/store"
)

// How a suggestion marks the photos it rejects and picks.
const (
	MarkFlags  = "flags"  // rejected: true, picked: true
	MarkStars  = "stars"  // rating 1, rating 5
	MarkLabels = "labels" // colorLabel red, colorLabel green
)

// Marks lists them, the default first.
var Marks = []string{MarkFlags, MarkStars, MarkLabels}

// MaxKeepPerGroup bounds how many photos of a group a suggestion picks.
const MaxKeepPerGroup = 10

// maxLearnFrom is how many of a person's latest hand decisions their
// strictness is learned from: assist.Learn levels off long before, and a
// suggestion stays quick for someone with years of them.
const maxLearnFrom = 5000

// CullStrictness is a person's strictness of assisted culling: the base
// they set (the defaults where they set none) and what their decisions
// by hand since LearnSince (nil: ever) moved it to.
type CullStrictness struct {
	Base, Effective assist.Strictness
	Adjustments     []assist.Adjustment
	LearnSince      *time.Time
}

// CullPreferences returns user's strictness, learned from their hand
// decisions in all their projects.
func (a *App) CullPreferences(ctx context.Context, user uuid.UUID) (*CullStrictness, error) {
	return a.learned(ctx, user, a.store.CullPreferences)
}

// SetCullStrictness makes s user's base strictness: each criterion a
// number 0–1 or nil (off); those s leaves out take the default.
func (a *App) SetCullStrictness(ctx context.Context, user uuid.UUID, s assist.Strictness) (*CullStrictness, error) {
	return a.learned(ctx, user, func(ctx context.Context, user uuid.UUID) (store.CullPreferences, error) {
		return a.store.SetCullStrictness(ctx, user, s)
	})
}

// ResetCullPreferences sets user's strictness back to the defaults and
// forgets what their decisions taught so far; later decisions teach again.
func (a *App) ResetCullPreferences(ctx context.Context, user uuid.UUID) (*CullStrictness, error) {
	return a.learned(ctx, user, a.store.ResetCullPreferences)
}

// learned is the strictness of user's preferences, as prefs reads or
// writes them, moved by assist.Learn over their hand decisions since
// their LearnSince.
func (a *App) learned(ctx context.Context, user uuid.UUID,
	prefs func(context.Context, uuid.UUID) (store.CullPreferences, error)) (*CullStrictness, error) {
	p, err := prefs(ctx, user)
	if err != nil {
		return nil, err
	}
	base := assist.Defaults()
	for c, v := range p.Strictness {
		if _, ok := base[c]; ok {
			base[c] = v
		}
	}
	decided, err := a.store.HandDecisions(ctx, user, maxLearnFrom)
	if err != nil {
		return nil, err
	}
	photos, _ := cullPhotos(decided)
	hand := make(map[uuid.UUID]assist.Decision, len(decided))
	for _, d := range decided {
		hand[d.ID] = decisionOf(*d.Rating)
	}
	effective, adjustments := assist.Learn(photos, base, hand)
	return &CullStrictness{Base: base, Effective: effective, Adjustments: adjustments, LearnSince: p.LearnSince}, nil
}

// CullRequest is what a suggestion is asked for.
type CullRequest struct {
	// Strictness holds the criteria the request sets: a number 0–1, or
	// nil for off. The others take the person's learned strictness.
	Strictness assist.Strictness
	// KeepPerGroup picks the best this many of each burst or duplicate
	// group and rejects the rest; 0 picks nothing.
	KeepPerGroup int
	// Mark is one of Marks; MarkFlags when empty.
	Mark string
}

// CullSuggestion is a suggestion, the strictness it was made under, and
// the changes that would mark it, each assisted.
type CullSuggestion struct {
	assist.Suggestion
	Strictness assist.Strictness
	// Actions mark the suggested rejects and picks that are not marked
	// so yet, and clear the marks of the same kind the assistant made
	// earlier that this suggestion no longer makes.
	Actions []store.RatingChange
}

// SuggestCull judges every processed photo of project for user, leaving
// alone those they decided by hand, and changes nothing: the actions go
// to CullActions when the person accepts them.
func (a *App) SuggestCull(ctx context.Context, user, project uuid.UUID, req CullRequest) (*CullSuggestion, error) {
	mark, ok := cullMarks[cmp.Or(req.Mark, MarkFlags)]
	if !ok {
		return nil, FieldErrors{"mark": "must be flags, stars or labels"}
	}
	prefs, err := a.CullPreferences(ctx, user)
	if err != nil {
		return nil, err
	}
	s := prefs.Effective
	for c, v := range req.Strictness {
		s[c] = v
	}
	stored, err := a.store.CullPhotos(ctx, project, user)
	if err != nil {
		return nil, err
	}
	photos, ratings := cullPhotos(stored)
	hand := map[uuid.UUID]assist.Decision{}
	for id, r := range ratings {
		if r.HandDecision() {
			hand[id] = decisionOf(*r)
		}
	}
	sg := assist.Suggest(photos, s, req.KeepPerGroup, hand)
	return &CullSuggestion{Suggestion: sg, Strictness: s, Actions: mark.actions(sg, ratings)}, nil
}

// cullPhotos reads stored photos as assist judges them, each burst and
// the duplicate groups sharing photos with it one group, and returns
// their ratings by photo.
func cullPhotos(stored []store.CullPhoto) ([]assist.Photo, map[uuid.UUID]*store.Rating) {
	photos := make([]assist.Photo, len(stored))
	ratings := make(map[uuid.UUID]*store.Rating, len(stored))
	groups := unionFind{}
	for _, p := range stored {
		if p.Burst != nil && p.Duplicate != nil {
			groups.union(*p.Burst, *p.Duplicate)
		}
	}
	for i, p := range stored {
		photos[i] = photoOf(p.ID, p.Quality, p.Faces)
		if g := cmp.Or(p.Burst, p.Duplicate); g != nil {
			photos[i].Group = groups.find(*g)
		}
		if p.Rating != nil {
			ratings[p.ID] = p.Rating
		}
	}
	return photos, ratings
}

// unionFind merges groups that share a photo: each merged group points
// at another of its merge, up to the one that names them all.
type unionFind map[uuid.UUID]uuid.UUID

func (u unionFind) find(id uuid.UUID) uuid.UUID {
	for {
		up, ok := u[id]
		if !ok {
			return id
		}
		id = up
	}
}

func (u unionFind) union(a, b uuid.UUID) {
	if ra, rb := u.find(a), u.find(b); ra != rb {
		u[rb] = ra
	}
}

// photoOf is a photo's stored quality and faces as assist reads them.
func photoOf(id uuid.UUID, quality json.RawMessage, faces *store.FaceCounts) assist.Photo {
	p := assist.FromQuality(id, quality)
	if faces != nil {
		p.Faces = &assist.Faces{Count: faces.Count, EyesClosed: faces.EyesClosed}
		if faces.MinSharpness != nil {
			p.Faces.MinSharpness = *faces.MinSharpness
		}
		if faces.Clipped != nil {
			p.Faces.Clipped, p.Faces.ClippedRead = *faces.Clipped, true
		}
	}
	return p
}

// decisionOf reads a hand decision as a keep or a reject: the flags
// first, then the stars (1 rejects, 4 and 5 keep), then the label (red
// rejects, green keeps), as the marks of a suggestion write them.
func decisionOf(r store.Rating) assist.Decision {
	switch {
	case r.Rejected:
		return assist.Decision{Rejected: true}
	case r.Picked:
		return assist.Decision{Picked: true}
	case r.Rating != nil:
		return assist.Decision{Rejected: *r.Rating == 1, Picked: *r.Rating >= 4}
	case r.ColorLabel != nil:
		return assist.Decision{Rejected: *r.ColorLabel == "red", Picked: *r.ColorLabel == "green"}
	}
	return assist.Decision{}
}

// cullMark is how one of Marks writes a reject and a pick, and reads
// them back.
type cullMark struct {
	reject, pick, clear func(id uuid.UUID) store.RatingChange
	rejected, picked    func(r *store.Rating) bool
}

var cullMarks = map[string]cullMark{
	MarkFlags: {
		reject: func(id uuid.UUID) store.RatingChange { return store.RatingChange{AssetID: id, Rejected: to(true)} },
		pick:   func(id uuid.UUID) store.RatingChange { return store.RatingChange{AssetID: id, Picked: to(true)} },
		clear: func(id uuid.UUID) store.RatingChange {
			return store.RatingChange{AssetID: id, Picked: to(false), Rejected: to(false)}
		},
		rejected: func(r *store.Rating) bool { return r.Rejected },
		picked:   func(r *store.Rating) bool { return r.Picked },
	},
	MarkStars: {
		reject:   func(id uuid.UUID) store.RatingChange { return store.RatingChange{AssetID: id, Rating: to(1)} },
		pick:     func(id uuid.UUID) store.RatingChange { return store.RatingChange{AssetID: id, Rating: to(5)} },
		clear:    func(id uuid.UUID) store.RatingChange { return store.RatingChange{AssetID: id, ClearRating: true} },
		rejected: func(r *store.Rating) bool { return r.Rating != nil && *r.Rating == 1 },
		picked:   func(r *store.Rating) bool { return r.Rating != nil && *r.Rating == 5 },
	},
	MarkLabels: {
		reject:   func(id uuid.UUID) store.RatingChange { return store.RatingChange{AssetID: id, ColorLabel: to("red")} },
		pick:     func(id uuid.UUID) store.RatingChange { return store.RatingChange{AssetID: id, ColorLabel: to("green")} },
		clear:    func(id uuid.UUID) store.RatingChange { return store.RatingChange{AssetID: id, ClearColorLabel: true} },
		rejected: func(r *store.Rating) bool { return r.ColorLabel != nil && *r.ColorLabel == "red" },
		picked:   func(r *store.Rating) bool { return r.ColorLabel != nil && *r.ColorLabel == "green" },
	},
}

// to points at a copy of v.
func to[T any](v T) *T { return &v }

// actions are the assisted changes that bring the marks of m in line
// with sg: its rejects and picks not marked so yet, and the clearing of
// the assistant's own earlier marks that sg no longer makes. Photos
// decided by hand are in neither list and keep their marks.
func (m cullMark) actions(sg assist.Suggestion, ratings map[uuid.UUID]*store.Rating) []store.RatingChange {
	out := []store.RatingChange{}
	suggested := make(map[uuid.UUID]bool, len(sg.Rejects)+len(sg.Picks))
	add := func(verdicts []assist.Verdict, marked func(*store.Rating) bool, change func(uuid.UUID) store.RatingChange) {
		for _, v := range verdicts {
			suggested[v.AssetID] = true
			if r := ratings[v.AssetID]; r == nil || !marked(r) {
				out = append(out, change(v.AssetID))
			}
		}
	}
	add(sg.Rejects, m.rejected, m.reject)
	add(sg.Picks, m.picked, m.pick)
	var stale []uuid.UUID
	for id, r := range ratings {
		if r.Assisted && !suggested[id] && (m.rejected(r) || m.picked(r)) {
			stale = append(stale, id)
		}
	}
	slices.SortFunc(stale, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	for _, id := range stale {
		out = append(out, m.clear(id))
	}
	for i := range out {
		out[i].Assisted = true
	}
	return out
}

// AssetQuality is an asset's stored quality as the API shows it: its
// stored keys, with reasons, why assist.Judge warns of the photo at the
// default strictness, faces included, and warnings, their codes. A photo
// without signals (ingested before them) keeps its stored warnings, with
// the faces' added. A quality that is no JSON object is left as it is.
func AssetQuality(id uuid.UUID, quality json.RawMessage, scan *store.FaceScan) json.RawMessage {
	var q map[string]json.RawMessage
	if json.Unmarshal(quality, &q) != nil || q == nil {
		return quality
	}
	var faces *store.FaceCounts
	if scan != nil {
		faces = &store.FaceCounts{Count: scan.FaceCount, EyesClosed: scan.EyesClosed, MinSharpness: scan.MinSharpness,
			Clipped: scan.FacesClipped}
	}
	p := photoOf(id, quality, faces)
	reasons := assist.Judge(p, assist.Defaults())
	var warnings []string
	if !p.Judged {
		json.Unmarshal(q["warnings"], &warnings) // none when it holds no list of codes
	}
	warnings = append([]string{}, warnings...)
	// Judged with the faces, which the ingest had not found: they add
	// warnings, and faces that keep their highlights take back an
	// over-exposure the frame alone read.
	for _, r := range reasons {
		if !slices.Contains(warnings, r.Code) {
			warnings = append(warnings, r.Code)
		}
	}
	q["reasons"], _ = json.Marshal(append([]assist.Reason{}, reasons...))
	q["warnings"], _ = json.Marshal(warnings)
	out, err := json.Marshal(q)
	if err != nil {
		return quality
	}
	return out
}
