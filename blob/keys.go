package blob

import "github.com/google/uuid"

// OriginalKey is where an asset's original is stored.
func OriginalKey(project, asset uuid.UUID) string {
	return "originals/" + project.String() + "/" + asset.String()
}

// DerivedKey is where a file made from an asset is stored, by kind
// ("thumbnail", "preview") and extension.
func DerivedKey(asset uuid.UUID, kind, ext string) string {
	return "derived/" + asset.String() + "/" + kind + "." + ext
}
