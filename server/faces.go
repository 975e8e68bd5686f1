package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"lightbox/store"
)

// faceSummary is Asset.faces: what the list filters on.
type faceSummary struct {
	Count      int `json:"count"`
	EyesClosed int `json:"eyesClosed"` // faces whose eyes are closed
	OutOfFocus int `json:"outOfFocus"` // faces out of focus
	// MinFaceSharpness is the softest face's; null without faces.
	MinFaceSharpness *float64 `json:"minFaceSharpness"`
}

func toFaceSummary(f store.FaceScan) *faceSummary {
	return &faceSummary{Count: f.FaceCount, EyesClosed: f.EyesClosed, OutOfFocus: f.OutOfFocus, MinFaceSharpness: f.MinSharpness}
}

type faceBox struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

type eyeOpenness struct {
	Left  float64 `json:"left"`
	Right float64 `json:"right"`
}

type headAngles struct {
	Yaw   float64 `json:"yaw"`
	Pitch float64 `json:"pitch"`
	Roll  float64 `json:"roll"`
}

type faceJSON struct {
	Box         faceBox         `json:"box"`
	Score       float64         `json:"score"`
	EyeOpenness *eyeOpenness    `json:"eyeOpenness"`
	HeadAngles  *headAngles     `json:"headAngles"`
	Landmarks   json.RawMessage `json:"landmarks"`
	Sharpness   float64         `json:"sharpness"`
	EyesClosed  bool            `json:"eyesClosed"`
	OutOfFocus  bool            `json:"outOfFocus"`
}

type assetFacesJSON struct {
	AssetID string `json:"assetId"`
	// Status is off (the project does not detect faces), pending (not
	// looked for yet) or done.
	Status     string       `json:"status"`
	Model      *string      `json:"model"`
	WidthPx    *int         `json:"widthPx"` // of the preview the faces were found in
	HeightPx   *int         `json:"heightPx"`
	Summary    *faceSummary `json:"summary"`
	Faces      []faceJSON   `json:"faces"`
	DetectedAt *time.Time   `json:"detectedAt"`
}

// assetFaces answers GET /v1/assets/{id}/faces: the faces found in the
// asset's preview, each with its box, eyes, head angles and sharpness.
func (s *Server) assetFaces(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	on, err := s.store.DetectsFaces(ctx, a.ProjectID)
	if err != nil {
		fail(c, err)
		return
	}
	scan, faces, err := s.store.Faces(ctx, a.ID)
	if err != nil {
		fail(c, err)
		return
	}
	out := assetFacesJSON{AssetID: a.ID.String(), Status: "off", Faces: make([]faceJSON, len(faces))}
	switch {
	case scan != nil:
		at := scan.ScannedAt.UTC()
		out.Status, out.Model, out.WidthPx, out.HeightPx = "done", &scan.Model, &scan.Width, &scan.Height
		out.Summary, out.DetectedAt = toFaceSummary(*scan), &at
	case on:
		out.Status = "pending"
	}
	for i, f := range faces {
		j := faceJSON{Box: faceBox{f.X, f.Y, f.W, f.H}, Score: f.Score, Landmarks: f.Landmarks, Sharpness: f.Sharpness,
			EyesClosed: f.EyesClosed, OutOfFocus: f.OutOfFocus}
		if f.EyeLeft != nil && f.EyeRight != nil {
			j.EyeOpenness = &eyeOpenness{*f.EyeLeft, *f.EyeRight}
		}
		if f.Yaw != nil && f.Pitch != nil && f.Roll != nil {
			j.HeadAngles = &headAngles{*f.Yaw, *f.Pitch, *f.Roll}
		}
		if len(j.Landmarks) == 0 {
			j.Landmarks = json.RawMessage("null")
		}
		out.Faces[i] = j
	}
	c.JSON(http.StatusOK, out)
}
