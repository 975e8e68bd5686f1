package app

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/imaging/formats"
	"lightbox/store"
)

// MaxFilesPerCall is the most files one call prepares, finalizes or
// imports.
const MaxFilesPerCall = 1000

// UploadFile is a file a client is about to send, as it describes it.
type UploadFile struct {
	ClientFileID *string
	Filename     string
	ByteSize     int64
	// ContentType is the declared type; CheckUploads gives the one the
	// original is recorded with.
	ContentType string
	CapturedAt  *time.Time
}

// Reservation is where and until when one file may be sent.
type Reservation struct {
	ClientFileID *string
	AssetID      uuid.UUID
	blob.SignedURL
}

// CheckUploads checks the files of one prepare call, none larger than
// maxBytes, and returns them with the content type each original is
// recorded with. A file of a type the service does not take is refused
// as an UnsupportedError, unless other fields are wrong too: then every
// problem comes back as FieldErrors.
func CheckUploads(files []UploadFile, maxBytes int64) ([]UploadFile, error) {
	if len(files) == 0 || len(files) > MaxFilesPerCall {
		return nil, FieldErrors{"files": fmt.Sprintf("must list 1 to %d files", MaxFilesPerCall)}
	}
	out := make([]UploadFile, len(files))
	errs, unsupported := FieldErrors{}, FieldErrors{}
	for i, f := range files {
		at := fmt.Sprintf("files[%d].", i)
		if msg := CheckFilename(f.Filename); msg != "" {
			errs.Add(at+"filename", msg)
		}
		if f.ByteSize < 1 || f.ByteSize > maxBytes {
			errs.Add(at+"byteSize", fmt.Sprintf("must be 1 to %d bytes", maxBytes))
		}
		if f.ClientFileID != nil && len(*f.ClientFileID) > 200 {
			errs.Add(at+"clientFileId", "must be at most 200 characters")
		}
		if msg := CheckOffset(f.CapturedAt); msg != "" {
			errs.Add(at+"capturedAt", msg)
		}
		declared := f.ContentType
		if mt, _, err := mime.ParseMediaType(declared); err == nil {
			declared = mt
		}
		if f.ContentType = uploadType(declared, f.Filename); f.ContentType == "" {
			unsupported.Add(at+"contentType", fmt.Sprintf("%q is not supported; send %s", declared, formats.Names))
		}
		out[i] = f
	}
	if len(errs) > 0 {
		for k, v := range unsupported {
			errs.Add(k, v)
		}
		return nil, errs
	}
	if len(unsupported) > 0 {
		return nil, &UnsupportedError{Fields: unsupported}
	}
	return out, nil
}

// ReserveUploads records files, checked by CheckUploads, as assets of
// user's project waiting for their bytes and signs a PUT URL for each,
// valid for ttl. Files that would pass the user's bytes or files-in-flight
// quota are refused, all of them, as a QuotaError.
func (a *App) ReserveUploads(ctx context.Context, user, project uuid.UUID, files []UploadFile, ttl time.Duration) ([]Reservation, error) {
	expires := time.Now().Add(ttl).UTC().Truncate(time.Second)
	rows := make([]store.NewAsset, len(files))
	out := make([]Reservation, len(files))
	var total int64
	for i, f := range files {
		id := uuid.New()
		key := blob.OriginalKey(project, id)
		rows[i] = store.NewAsset{ID: id, ClientFileID: f.ClientFileID, Filename: f.Filename, ContentType: f.ContentType,
			ByteSize: f.ByteSize, BlobKey: key, CapturedAt: f.CapturedAt}
		u, err := a.Signer.SignPut(ctx, blob.Grant{Key: key, Expires: expires, MaxSize: f.ByteSize, ContentType: f.ContentType})
		if err != nil {
			return nil, err
		}
		out[i] = Reservation{ClientFileID: f.ClientFileID, AssetID: id, SignedURL: u}
		total += f.ByteSize
	}
	err := a.store.WithUsage(ctx, user, func(tx *store.Store, u *store.Usage) error {
		if err := a.checkQuota(u, ForUpload, u.CheckUpload(u.Limits(a.Quotas), len(files), total)); err != nil {
			return err
		}
		return tx.AddPendingAssets(ctx, project, rows, expires)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// uploadType names the content type recorded for an original: the
// declared type when it names an accepted format, else the one the file
// name's extension implies when the declared type says nothing specific
// (browsers send application/octet-stream or an empty type for raws and
// often for HEIC). It returns "" for anything else.
func uploadType(declared, filename string) string {
	if f := formats.FromContentType(declared); f != "" {
		return f.ContentType()
	}
	switch declared {
	case "", "application/octet-stream", "binary/octet-stream", "application/x-unknown", "image/x-dcraw", "image/x-raw":
		if f := formats.FromExt(filename); f != "" {
			return f.ContentType()
		}
	}
	return ""
}

// CheckFilename says what is wrong with name as a plain file name, or "".
func CheckFilename(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "is required"
	case len(name) > 255:
		return "must be at most 255 bytes"
	case strings.ContainsAny(name, `/\`):
		return "must be a file name without folders"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "must not contain control characters"
	}
	return ""
}

// maxOffset bounds the UTC offsets Postgres reads, ±15:59; Go reads up to
// ±23:59. No zone in use is beyond ±14:00.
const maxOffset = 16 * time.Hour

// CheckOffset says what is wrong with t's UTC offset, or "" (nil is fine).
func CheckOffset(t *time.Time) string {
	if t == nil {
		return ""
	}
	if _, off := t.Zone(); time.Duration(max(off, -off))*time.Second >= maxOffset {
		return "must have a UTC offset from -15:59 to +15:59"
	}
	return ""
}

// ErrFinalized refuses the bytes of an asset that no longer waits for
// them: it was finalized, and its bytes can no longer change.
var ErrFinalized = errors.New("the asset was finalized")

// ReceiveUpload records the bytes w holds, an upload of asset, if the
// asset still waits for them, and puts them in place: w is committed. An
// asset finalized meanwhile refuses them as ErrFinalized, and the caller
// aborts w. A process that dies between the two writes loses nothing: the
// record is never committed before its bytes are in place, and bytes in
// place without their record are found there by Finalize.
func (a *App) ReceiveUpload(ctx context.Context, asset uuid.UUID, w blob.Writer) (blob.Info, error) {
	info := w.Written()
	synced := make(chan error, 1)
	go func() { synced <- w.Sync() }()
	// The record goes first and takes the row lock, which orders this
	// upload against a finalize of the same asset: bytes never change under
	// an asset that was already accepted, and no finalize sees a record
	// before its bytes are in place.
	err := a.store.WithTx(ctx, func(tx *store.Store) error {
		recorded, err := tx.RecordPendingUpload(ctx, asset, info.SHA256, info.Size)
		syncErr := <-synced
		switch {
		case err != nil:
			return err
		case !recorded:
			return ErrFinalized
		case syncErr != nil:
			return syncErr
		}
		_, err = w.Commit()
		return err
	})
	return info, err
}
