package render_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"lightbox/render"
)

func TestPresetTable(t *testing.T) {
	want := map[string]render.Settings{
		render.PresetFullRes:           {IncludeNotReady: true, IncludeEdits: true},
		render.PresetWeb:               {LongEdge: 2048, Quality: 85, IncludeNotReady: true, IncludeEdits: true},
		render.PresetInstagramCarousel: {Width: 1080, Height: 1350, Quality: 90, IncludeNotReady: true, IncludeEdits: true},
		render.PresetStory9x16:         {Width: 1080, Height: 1920, Quality: 90, IncludeNotReady: true, IncludeEdits: true},
		render.PresetContactSheet:      {PerPage: 24, Quality: 85, IncludeNotReady: true, IncludeEdits: true},
	}
	for name, defaults := range want {
		p, ok := render.Lookup(name)
		if !ok || p.Name != name {
			t.Fatalf("Lookup(%q) = %+v, %v", name, p, ok)
		}
		if got, problems := p.ParseSettings(nil); got != defaults || len(problems) != 0 {
			t.Errorf("%s: defaults %+v %v, want %+v", name, got, problems, defaults)
		}
	}
	if _, ok := render.Lookup("poster"); ok {
		t.Error("an unknown preset was found")
	}
	if got := render.PresetNames(); got != "full_res, web, instagram_carousel, story_9x16 or contact_sheet_pdf" {
		t.Errorf("PresetNames() = %q", got)
	}
	id := uuid.MustParse("1a2b3c4d-0000-4000-8000-000000000000")
	if got := render.ArchiveName(render.PresetInstagramCarousel, id); got != "lightbox-instagram-carousel-1a2b3c4d.zip" {
		t.Errorf("ArchiveName = %q", got)
	}
}

func TestParseSettings(t *testing.T) {
	parse := func(preset, raw string) (render.Settings, map[string]string) {
		t.Helper()
		p, ok := render.Lookup(preset)
		if !ok {
			t.Fatalf("no preset %q", preset)
		}
		return p.ParseSettings(json.RawMessage(raw))
	}
	for _, c := range []struct {
		preset, raw string
		want        render.Settings
	}{
		{render.PresetWeb, `null`, render.Settings{LongEdge: 2048, Quality: 85, IncludeNotReady: true, IncludeEdits: true}},
		{render.PresetWeb, `{"quality": 70, "includeNotReady": false}`, render.Settings{LongEdge: 2048, Quality: 70, IncludeEdits: true}},
		{render.PresetFullRes, `{"includeEdits": false}`, render.Settings{IncludeNotReady: true}},
		// A box replaces the default long edge; a side left out is unbounded.
		{render.PresetWeb, `{"width": 800}`, render.Settings{Width: 800, Quality: 85, IncludeNotReady: true, IncludeEdits: true}},
		{render.PresetStory9x16, `{"height": 1600}`, render.Settings{Width: 1080, Height: 1600, Quality: 90, IncludeNotReady: true, IncludeEdits: true}},
		{render.PresetContactSheet, `{"perPage": 6}`, render.Settings{PerPage: 6, Quality: 85, IncludeNotReady: true, IncludeEdits: true}},
		// Sizes past the largest preset's are taken as it: a fit box side
		// by side, a crop box as a whole, keeping its shape.
		{render.PresetWeb, `{"longEdge": 8192}`, render.Settings{LongEdge: render.MaxEdge, Quality: 85, IncludeNotReady: true, IncludeEdits: true}},
		{render.PresetWeb, `{"width": 8192, "height": 1000}`, render.Settings{Width: render.MaxEdge, Height: 1000, Quality: 85, IncludeNotReady: true, IncludeEdits: true}},
		{render.PresetInstagramCarousel, `{"width": 8192, "height": 8192, "quality": 100}`,
			render.Settings{Width: render.MaxEdge, Height: render.MaxEdge, Quality: 100, IncludeNotReady: true, IncludeEdits: true}},
		{render.PresetStory9x16, `{"width": 2160, "height": 3840}`, render.Settings{Width: 1152, Height: render.MaxEdge, Quality: 90, IncludeNotReady: true, IncludeEdits: true}},
		{render.PresetFullRes, `{"xmp": true, "xmpNaming": "darktable", "picked": "label:Green"}`,
			render.Settings{IncludeNotReady: true, IncludeEdits: true, XMP: true, XMPNaming: "darktable", Picked: "label:Green"}},
		{render.PresetWeb, `{"xmp": true}`, render.Settings{LongEdge: 2048, Quality: 85, IncludeNotReady: true, IncludeEdits: true, XMP: true}},
		{render.PresetFullRes, `{"pairs": "raw"}`, render.Settings{IncludeNotReady: true, IncludeEdits: true, Pairs: "raw"}},
	} {
		if got, problems := parse(c.preset, c.raw); got != c.want || len(problems) != 0 {
			t.Errorf("%s %s: %+v %v, want %+v", c.preset, c.raw, got, problems, c.want)
		}
	}
	for _, c := range []struct {
		preset, raw, field, problem string
	}{
		{render.PresetWeb, `{"quality": 20}`, "settings.quality", "must be a whole number from 40 to 100"},
		{render.PresetWeb, `{"longEdge": 1000.5}`, "settings.longEdge", "must be a whole number from 320 to 8192"},
		{render.PresetWeb, `{"longEdge": 1000, "width": 800}`, "settings.longEdge", "give longEdge, or width and height, not both"},
		{render.PresetWeb, `{"colour": "sepia"}`, "settings.colour",
			"is not a setting; settings are longEdge, width, height, quality, perPage, includeNotReady, includeEdits, xmp, xmpNaming, picked, pairs"},
		{render.PresetFullRes, `{"quality": 90}`, "settings.quality",
			"does not apply to the full_res preset, which takes includeNotReady, includeEdits, xmp, xmpNaming, picked, pairs"},
		{render.PresetFullRes, `{"xmp": true, "xmpNaming": "lightroom"}`, "settings.xmpNaming", `must be "adobe" (NAME.xmp) or "darktable" (NAME.EXT.xmp)`},
		{render.PresetFullRes, `{"xmp": true, "picked": "rating:9"}`, "settings.picked",
			`must be "none", "rating:N" (N 1 to 5) or "label:COLOUR" (red, yellow, green, blue or purple)`},
		{render.PresetFullRes, `{"picked": "rating:4"}`, "settings.picked", "needs xmp: true"},
		{render.PresetWeb, `{"xmp": true, "xmpNaming": "adobe"}`, "settings.xmpNaming",
			"does not apply to the web preset, which takes longEdge, width, height, quality, includeNotReady, includeEdits, xmp, picked, pairs"},
		{render.PresetContactSheet, `{"xmp": true}`, "settings.xmp",
			"does not apply to the contact_sheet_pdf preset, which takes perPage, quality, includeNotReady, includeEdits, pairs"},
		{render.PresetFullRes, `{"pairs": "dng"}`, "settings.pairs", `must be "both", "raw" or "jpeg"`},
		{render.PresetContactSheet, `{"perPage": 0}`, "settings.perPage", "must be a whole number from 1 to 100"},
		{render.PresetContactSheet, `{"includeNotReady": "yes"}`, "settings.includeNotReady", "must be true or false"},
		{render.PresetWeb, `[1, 2]`, "settings", "must be an object"},
	} {
		_, problems := parse(c.preset, c.raw)
		if len(problems) != 1 || problems[c.field] != c.problem {
			t.Errorf("%s %s: problems %v, want %s: %s", c.preset, c.raw, problems, c.field, c.problem)
		}
	}
}
