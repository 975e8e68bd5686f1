// Package render provides what is drawn from originals after ingest: the
// export presets and their settings, one photo rendered for a preset,
// contact sheet pages, and the archive an export is delivered in (a zip of
// photos, or a contact sheet's PDF).
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"

	"lightbox/xmp"
)

// The export presets, as the API names them.
const (
	PresetFullRes           = "full_res"
	PresetWeb               = "web"
	PresetInstagramCarousel = "instagram_carousel"
	PresetStory9x16         = "story_9x16"
	PresetContactSheet      = "contact_sheet_pdf"
)

// aliases are older names the API still takes for a preset.
var aliases = map[string]string{"contact_sheet": PresetContactSheet}

// Settings are an export's effective settings, stored with it: the
// preset's defaults with the user's overrides applied, so the worker builds
// exactly what the API answered.
type Settings struct {
	LongEdge        int  `json:"longEdge,omitempty"`
	Width           int  `json:"width,omitempty"`
	Height          int  `json:"height,omitempty"`
	Quality         int  `json:"quality,omitempty"`
	PerPage         int  `json:"perPage,omitempty"`
	IncludeNotReady bool `json:"includeNotReady"`
	// IncludeEdits draws each photo with its latest edit, from its
	// original; without, or for a photo with no edit, the photo as shot
	// (full_res: the original's own bytes).
	IncludeEdits bool `json:"includeEdits"`
	// XMP carries the caller's decisions (rating, reject, colour label,
	// keywords, IPTC) to an editor: a sidecar beside each original, an
	// embedded packet in each rendered JPEG. XMPNaming names sidecars
	// "adobe" (NAME.xmp, the default) or "darktable" (NAME.EXT.xmp);
	// Picked is how a pick is written (xmp.WriteOptions' Pick).
	XMP       bool   `json:"xmp,omitempty"`
	XMPNaming string `json:"xmpNaming,omitempty"`
	Picked    string `json:"picked,omitempty"`
	// Pairs says which files of a RAW+JPEG pair go in when either is
	// chosen: PairsBoth (the default; "" too), PairsRaw or PairsJPEG.
	Pairs string `json:"pairs,omitempty"`
}

// The files of RAW+JPEG pairs an export takes.
const (
	PairsBoth = "both"
	PairsRaw  = "raw"
	PairsJPEG = "jpeg"
)

// Sidecar namings: Adobe's drops the photo's extension, darktable's and
// digiKam's keep it.
const (
	NamingAdobe     = "adobe"
	NamingDarktable = "darktable"
)

// Preset is a kind of export: its default settings, the settings a user
// may change, and what its photos are drawn from.
type Preset struct {
	Name     string
	Defaults Settings
	Allowed  []string // setting keys a user may override
	// FromPreview draws from the preview ingest made, when there is one:
	// it is smaller to decode. Previews are lossy and no larger than the
	// web preset, so only the contact sheet's thumbnails use them.
	FromPreview bool
}

// presets are the kinds of export, in the order users are told them.
// full_res copies the originals; web fits each photo in a box; the social
// presets fill theirs, centre-cropped; the contact sheet lays thumbnails
// out perPage to a page.
var presets = []Preset{
	{Name: PresetFullRes, Allowed: []string{"includeNotReady", "includeEdits", "xmp", "xmpNaming", "picked", "pairs"}},
	{Name: PresetWeb, Defaults: Settings{LongEdge: 2048, Quality: 85},
		Allowed: []string{"longEdge", "width", "height", "quality", "includeNotReady", "includeEdits", "xmp", "picked", "pairs"}},
	{Name: PresetInstagramCarousel, Defaults: Settings{Width: 1080, Height: 1350, Quality: 90},
		Allowed: []string{"width", "height", "quality", "includeNotReady", "includeEdits", "xmp", "picked", "pairs"}},
	{Name: PresetStory9x16, Defaults: Settings{Width: 1080, Height: 1920, Quality: 90},
		Allowed: []string{"width", "height", "quality", "includeNotReady", "includeEdits", "xmp", "picked", "pairs"}},
	{Name: PresetContactSheet, Defaults: Settings{PerPage: 24, Quality: 85},
		Allowed: []string{"perPage", "quality", "includeNotReady", "includeEdits", "pairs"}, FromPreview: true},
}

// Lookup returns the preset called name, or one of its aliases.
func Lookup(name string) (Preset, bool) {
	if canonical, ok := aliases[name]; ok {
		name = canonical
	}
	i := slices.IndexFunc(presets, func(p Preset) bool { return p.Name == name })
	if i < 0 {
		return Preset{}, false
	}
	return presets[i], true
}

// PresetNames lists the presets for a message: "a, b or c".
func PresetNames() string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Bounds of the settings a user may override. A size above MaxEdge is
// taken as MaxEdge: it is the largest any preset renders (the web preset's
// long edge), and a render's cost grows with its area, so a box of
// 8192×8192 asked over a handful of photos would hold a worker's memory
// and cores for everyone.
const (
	MaxEdge                = 2048
	minEdge, maxEdge       = 320, 8192
	minQuality, maxQuality = 40, 100
	minPerPage, maxPerPage = 1, 100
)

// settingKeys are every setting an export takes; each preset allows some.
var settingKeys = []string{"longEdge", "width", "height", "quality", "perPage", "includeNotReady", "includeEdits", "xmp", "xmpNaming", "picked", "pairs"}

// ParseSettings applies the user's settings in raw (a JSON object; empty
// or null keeps the defaults) over p's defaults. problems maps each
// setting that is wrong ("settings.quality") to what is wrong with it.
// Photos not yet ready are included, and edits drawn, unless the user
// says otherwise.
func (p Preset) ParseSettings(raw json.RawMessage) (s Settings, problems map[string]string) {
	out := p.Defaults
	out.IncludeNotReady, out.IncludeEdits = true, true
	problems = map[string]string{}
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" || p.Allowed == nil {
		return out, problems
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil {
		problems["settings"] = "must be an object"
		return out, problems
	}
	ints := map[string]struct {
		dst    *int
		lo, hi int
	}{
		"longEdge": {&out.LongEdge, minEdge, maxEdge},
		"width":    {&out.Width, minEdge, maxEdge},
		"height":   {&out.Height, minEdge, maxEdge},
		"quality":  {&out.Quality, minQuality, maxQuality},
		"perPage":  {&out.PerPage, minPerPage, maxPerPage},
	}
	for key, v := range in {
		field := "settings." + key
		switch n, isInt := ints[key]; {
		case !slices.Contains(settingKeys, key):
			problems[field] = "is not a setting; settings are " + strings.Join(settingKeys, ", ")
		case !slices.Contains(p.Allowed, key):
			problems[field] = fmt.Sprintf("does not apply to the %s preset, which takes %s", p.Name, strings.Join(p.Allowed, ", "))
		case isInt:
			var f float64
			if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || f < float64(n.lo) || f > float64(n.hi) {
				problems[field] = fmt.Sprintf("must be a whole number from %d to %d", n.lo, n.hi)
			} else {
				*n.dst = int(f)
			}
		case key == "includeEdits":
			if err := json.Unmarshal(v, &out.IncludeEdits); err != nil {
				problems[field] = "must be true or false"
			}
		case key == "xmp":
			if err := json.Unmarshal(v, &out.XMP); err != nil {
				problems[field] = "must be true or false"
			}
		case key == "xmpNaming":
			if json.Unmarshal(v, &out.XMPNaming) != nil || out.XMPNaming != NamingAdobe && out.XMPNaming != NamingDarktable {
				problems[field] = `must be "adobe" (NAME.xmp) or "darktable" (NAME.EXT.xmp)`
			}
		case key == "picked":
			if json.Unmarshal(v, &out.Picked) != nil {
				problems[field] = `must be "none", "rating:N" or "label:COLOUR"`
			} else if err := xmp.ParsePick(out.Picked); err != nil {
				problems[field] = `must be "none", "rating:N" (N 1 to 5) or "label:COLOUR" (red, yellow, green, blue or purple)`
			}
		case key == "pairs":
			if json.Unmarshal(v, &out.Pairs) != nil || !slices.Contains([]string{PairsBoth, PairsRaw, PairsJPEG}, out.Pairs) {
				problems[field] = `must be "both", "raw" or "jpeg"`
			}
		default: // includeNotReady
			if err := json.Unmarshal(v, &out.IncludeNotReady); err != nil {
				problems[field] = "must be true or false"
			}
		}
	}
	for _, key := range []string{"xmpNaming", "picked"} {
		if _, ok := in[key]; ok && !out.XMP && problems["settings."+key] == "" {
			problems["settings."+key] = "needs xmp: true"
		}
	}
	_, long := in["longEdge"]
	_, w := in["width"]
	_, h := in["height"]
	switch {
	case long && (w || h):
		problems["settings.longEdge"] = "give longEdge, or width and height, not both"
	case p.Name == PresetWeb && (w || h):
		// A box replaces the default long edge; a side left out is unbounded.
		out.LongEdge = 0
		if !w {
			out.Width = 0
		}
		if !h {
			out.Height = 0
		}
	}
	out.capSize(p)
	return out, problems
}

// capSize brings every size down to MaxEdge: a long edge or a fit box's
// sides each on its own, a crop box as a whole, so it keeps its shape.
func (s *Settings) capSize(p Preset) {
	s.LongEdge = min(s.LongEdge, MaxEdge)
	if p.Name == PresetWeb || s.Width <= MaxEdge && s.Height <= MaxEdge {
		s.Width, s.Height = min(s.Width, MaxEdge), min(s.Height, MaxEdge)
		return
	}
	// Never below the smallest size a setting takes: a box of 100:1 or
	// more loses some of its shape rather than a side.
	scale := float64(MaxEdge) / float64(max(s.Width, s.Height))
	s.Width = max(minEdge, int(float64(s.Width)*scale+0.5))
	s.Height = max(minEdge, int(float64(s.Height)*scale+0.5))
}

// ArchiveName is the file name of an export's archive, what a browser
// saves it as: "lightbox-web-1a2b3c4d.zip", "lightbox-contact-sheet-1a2b3c4d.pdf".
func ArchiveName(preset string, export uuid.UUID) string {
	if p, ok := Lookup(preset); ok && p.Name == PresetContactSheet {
		return "lightbox-contact-sheet-" + export.String()[:8] + ".pdf"
	}
	return "lightbox-" + strings.ReplaceAll(preset, "_", "-") + "-" + export.String()[:8] + ".zip"
}

// ArchiveType is the media type of an export's archive.
func ArchiveType(preset string) string {
	if p, ok := Lookup(preset); ok && p.Name == PresetContactSheet {
		return "application/pdf"
	}
	return "application/zip"
}
