// Package faults holds Lightbox's fault suite: real server and worker
// processes (see testsupport/procs) sharing one Postgres, one Redis and one
// bucket, with no shared filesystem, taken through an ingest while a
// process is killed, Redis restarts or loses everything, Postgres stops,
// the blob disk fills or the ledger goes down. After each fault every
// asset must reach a final state with nothing done twice and nothing lost.
//
// `go test ./faults/` runs the short form; LIGHTBOX_CHAOS=1 (`make chaos`)
// the long one, with more photos and longer outages. Each run writes its
// table to artifacts/faults.txt.
package faults
