package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/events"
	"lightbox/store"
	"lightbox/xmp"
)

// SidecarContentType is the type an asset's XMP sidecar is kept and
// served as.
const SidecarContentType = "application/rdf+xml"

// maxWarning bounds each warning about a sidecar, in characters.
const maxWarning = 200

// BlobPutter stores bytes under a key; the blob store is one.
type BlobPutter interface {
	Put(ctx context.Context, key string, r io.Reader, limit int64) (blob.Info, error)
}

// Sidecar is what PutSidecar read of a sidecar and did with it.
type Sidecar struct {
	AssetID   uuid.UUID     `json:"assetId"`
	Decisions xmp.Decisions `json:"decisions"`
	// Applied is false when the packet was refused: nothing of it was
	// kept, and the asset's metadata warning says why.
	Applied bool `json:"applied"`
	// HandDecisionKept: the owner had rated the photo by hand, so the
	// sidecar's rating, flag and label were not applied.
	HandDecisionKept bool     `json:"handDecisionKept"`
	Warnings         []string `json:"warnings"`
}

// PutSidecar reads packet, the XMP sidecar of owner's asset, and, unless
// it is refused, keeps its bytes and applies it (store.SaveSidecar). A
// refused packet fails nothing: the answer says why, and so does the
// asset's metadata warning. The asset may be pending (its upload not yet
// finalized) or ingested; putting the same packet twice leaves the same
// state.
func (a *App) PutSidecar(ctx context.Context, log *slog.Logger, blobs BlobPutter, owner, asset uuid.UUID, packet []byte) (*Sidecar, error) {
	d, warnings, readErr := xmp.Read(packet)
	if readErr != nil {
		warnings = append(warnings, readErr.Error())
	}
	// A warning quotes the value it refused, which may be as long as the
	// packet.
	for i, w := range warnings {
		if utf8.RuneCountInString(w) > maxWarning {
			warnings[i] = string([]rune(w)[:maxWarning]) + "…"
		}
	}
	out := &Sidecar{AssetID: asset, Decisions: d, Applied: readErr == nil, Warnings: append([]string{}, warnings...)}
	if out.Decisions.Keywords == nil {
		out.Decisions.Keywords = []string{}
	}
	var project uuid.UUID
	err := a.store.WithTx(ctx, func(tx *store.Store) error {
		var err error
		if project, err = tx.LockAssetForSidecar(ctx, owner, asset); err != nil {
			return err
		}
		if readErr != nil {
			return tx.SetSidecarWarning(ctx, asset, strings.Join(warnings, "; "))
		}
		// The bytes are put while the row is held, so they are those of
		// the PUT whose decisions are saved when two race.
		key := blob.SidecarKey(asset)
		info, err := blobs.Put(ctx, key, bytes.NewReader(packet), int64(len(packet)))
		if err != nil {
			return err
		}
		save := store.SidecarOutput{AssetID: asset, Keywords: sidecarKeywords(d.Keywords),
			File: store.AssetFile{AssetID: asset, Kind: store.KindXMPSidecar, BlobKey: key, ContentType: SidecarContentType,
				ByteSize: info.Size, ChecksumSHA256: info.SHA256},
			Decision: &store.XMPDecision{Rating: d.Rating, Picked: d.Picked, Rejected: d.Rejected, ColorLabel: d.ColorLabel}}
		if iptc, _ := json.Marshal(d.IPTC); len(iptc) <= store.MaxIPTC {
			save.IPTC = iptc
		}
		save.Warning = strings.Join(warnings, "; ")
		out.HandDecisionKept, err = tx.SaveSidecar(ctx, save)
		return err
	})
	if err != nil {
		return nil, err
	}
	a.publish(ctx, log, events.AssetUpdated, project, uuid.Nil, map[string]any{"assetId": asset, "sidecar": true})
	return out, nil
}

// sidecarKeywords are the leading keywords within the bounds PATCH
// /v1/assets/{id} holds an owner's own to; the rest are dropped.
func sidecarKeywords(in []string) []string {
	out := make([]string, 0, min(len(in), store.MaxKeywords))
	for _, k := range in {
		if len(out) == store.MaxKeywords {
			break
		}
		if utf8.RuneCountInString(k) <= store.MaxKeywordLen {
			out = append(out, k)
		}
	}
	return out
}
