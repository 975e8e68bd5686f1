// Package backup provides consistent backups of a running Lightbox and
// their restore: the database (a pg_dump snapshot), the blobs its rows
// name, the chain's ledger and, when asked, the secrets, kept in a folder
// or under an S3 prefix (a Target), each backup described by a manifest.
//
// # Layout
//
// A target holds
//
//	blobs/<2 hex>/<SHA-256>          every file of every backup, by content
//	backups/<id>/db.dump             pg_dump, custom format
//	backups/<id>/ledger.jsonl        the chain's file ledger, whole lines
//	backups/<id>/secrets.age         with --include-secrets only
//	backups/<id>/manifest.json       written last
//
// where id is the UTC time the backup started, 20261130T051700Z (with -2,
// -3… when two start in one second). Blobs are kept by content, not by
// key, because the service rewrites some keys (a thumbnail drawn again,
// an edit's render, a sidecar sent again): an older backup keeps the
// bytes its rows describe. Blobs are shared by all backups, so a second
// backup copies only files the target does not hold yet (the same SHA-256
// and size); a file whose row records its SHA-256 (originals, derived
// files, sidecars) is skipped without being read, and one whose row does
// not (export archives, gallery previews, both under keys written once)
// takes its SHA-256 from the last backup's manifest, else is hashed first.
//
// The manifest lists every file with its size and SHA-256, the schema
// version, the chain head and the chain's public keys. A backup is
// complete when its manifest exists: one stopped midway (killed, a full or
// unreachable target, a cancelled context) has none, List shows it apart,
// and the next backup reuses the blobs it copied.
//
// # Pruning
//
// Prune keeps the newest N complete backups. It deletes the folders of
// older complete backups and of incomplete ones older than the newest
// complete backup (stopped midway: a newer backup completed since), each
// manifest first, so a deletion cut short leaves an incomplete backup,
// never a complete one lacking files. Then it deletes the blobs no kept
// manifest names, under two rules that keep a backup in progress whole. A
// running backup names blobs it copied and blobs it found in the target,
// of any age, before its manifest exists; so while an incomplete backup
// is kept (newer than every complete one: it may be running) no blob is
// deleted, and the next prune after it completes or is overtaken does it.
// A backup begun during the prune writes blobs only after its dump, so
// only blobs written before the prune began are deleted, and the prune
// lists the backups again at its end: one that appeared meanwhile may
// have counted on a deleted blob, and is named in ErrPruneRaced to be
// verified. The scheduled backup prunes under the same lock as it backs
// up, so it never races itself.
//
// # Consistency
//
// Create opens a REPEATABLE READ transaction, exports its snapshot
// (pg_export_snapshot) and runs pg_dump --snapshot on it; in the same
// snapshot it reads the schema version, the chain head and every key a
// row names (assets, asset_files, finished exports, gallery previews). It
// then copies those files, the snapshot released. A photo finalized after
// the snapshot is neither in the dump nor copied; one finalized before has
// its bytes in storage already (finalize comes after the upload), and
// originals are never rewritten, so the backup holds it whole. A derived
// file drawn again meanwhile is kept as it is then, under its own SHA-256.
// A file deleted meanwhile (a photo deleted, an export expired) is listed
// in the manifest as missing; so is one a row names that storage lacks.
// The ledger is copied after the snapshot, up to its last whole line, so
// it holds every attestation the dump does (a publish precedes its row).
//
// # Restore
//
// Restore wants an empty database (no user, no asset) and blob store (no
// object), and an empty ledger, unless forced. It checks the dump's
// SHA-256, loads it with pg_restore --clean --single-transaction, applies
// the migrations this Lightbox has beyond the backup's, writes each blob
// back at its key and the ledger to its file, then checks every original's
// SHA-256 against its row and verifies the chain from its first entry under
// the keys the manifest records. Redis is not part of a backup: jobs
// queued or running at the snapshot are handed to Asynq again by the
// worker's sweep.
//
// # Secrets
//
// With Options.Secrets the chain's signing key and the upload secret are
// sealed with age's scrypt recipient under a passphrase of at least
// MinPassphrase characters (secrets.age); without, a backup holds no
// secret. Restore opens them only when given a folder to write them to,
// and never replaces a file there.
package backup
