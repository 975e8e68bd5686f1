package blob

import (
	"fmt"

	"github.com/google/uuid"
)

// Kinds of file an asset has, as asset_files.kind and the API's files
// answer name them. Every kind but the original is derived from it, and
// always a JPEG.
const (
	KindOriginal      = "original"
	KindThumbnail     = "thumbnail"
	KindPreview       = "preview"
	KindEditPreview   = "edit_preview"
	KindEditThumbnail = "edit_thumbnail"
)

// DerivedKinds are the kinds of file tasks make from an original.
var DerivedKinds = []string{KindThumbnail, KindPreview, KindEditPreview, KindEditThumbnail}

// OriginalKey is where an asset's original is stored.
func OriginalKey(project, asset uuid.UUID) string {
	return "originals/" + project.String() + "/" + asset.String()
}

// DerivedKey is where a file of kind made from an asset is stored.
func DerivedKey(asset uuid.UUID, kind string) string {
	return "derived/" + asset.String() + "/" + kind + ".jpg"
}

// SidecarKey is where an asset's XMP sidecar is stored, beside the files
// made from it; writing it again replaces it.
func SidecarKey(asset uuid.UUID) string {
	return "derived/" + asset.String() + "/xmp_sidecar.xmp"
}

// ExportPartsPrefix is the folder an export's steps keep what they drew
// in until the archive holds it: a render per photo (ExportPartKey), or a
// contact sheet's pages (ExportPageKey).
func ExportPartsPrefix(export uuid.UUID) string {
	return "exports/" + export.String() + "/parts/"
}

// ExportPartKey is where an export keeps the render of one of its photos.
func ExportPartKey(export, asset uuid.UUID) string {
	return ExportPartsPrefix(export) + asset.String() + ".jpg"
}

// ExportPageKey is where an export keeps page n of its contact sheet.
func ExportPageKey(export uuid.UUID, n int) string {
	return fmt.Sprintf("%spage-%06d.jpg", ExportPartsPrefix(export), n)
}
