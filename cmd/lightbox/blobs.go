package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"lightbox/blob"
	"lightbox/cmd/boot"
	"lightbox/config"
	"lightbox/store"
)

// parseBlobsCopy parses "blobs copy --to s3". Only S3 is a destination:
// the disk backend is where an install starts.
func parseBlobsCopy(fs *flag.FlagSet, args []string) (command, error) {
	to := fs.String("to", "", "where the blobs go: s3")
	cmd, err := withFlags(fs, args, 0, []string{"to"}, command{run: func(ctx context.Context, _ *store.Store, out, _ io.Writer) error {
		return copyBlobs(ctx, out)
	}})
	if err == nil && *to != "s3" {
		return command{}, fmt.Errorf("blobs copy: --to %q: only s3 is supported", *to)
	}
	return cmd, err
}

// copyBlobs copies every blob under DATA_DIR into the bucket the S3_*
// settings name, printing a line per blob and a summary.
func copyBlobs(ctx context.Context, out io.Writer) error {
	cfg, _, err := boot.Config()
	if err != nil {
		return err
	}
	bucket, err := config.S3FromLookup(os.LookupEnv)
	if err != nil {
		return err
	}
	root := filepath.Join(cfg.DataDir, "blobs")
	if _, err := os.Stat(root); err != nil {
		return fmt.Errorf("no blobs to copy: %w", err)
	}
	from, err := blob.NewDisk(root)
	if err != nil {
		return err
	}
	to, err := blob.NewS3(boot.S3(bucket))
	if err != nil {
		return err
	}
	if err := to.EnsureBucket(ctx); err != nil {
		return fmt.Errorf("bucket %s at %s: %w", bucket.S3Bucket, bucket.S3Endpoint, err)
	}
	fmt.Fprintf(out, "copying %s to bucket %s at %s\n", root, bucket.S3Bucket, bucket.S3Endpoint)
	sum, err := blob.CopyToS3(ctx, from, to, func(e blob.CopyEvent) {
		if e.Err != nil {
			fmt.Fprintf(out, "[%d/%d] failed %s: %v\n", e.Done, e.Total, e.Key, e.Err)
			return
		}
		fmt.Fprintf(out, "[%d/%d] %s %s (%d bytes)\n", e.Done, e.Total, e.Outcome, e.Key, e.Size)
	})
	fmt.Fprintf(out, "copied %d (%d bytes), skipped %d, failed %d\n", sum.Copied, sum.Bytes, sum.Skipped, sum.Failed)
	switch {
	case err != nil:
		return err
	case sum.Failed > 0:
		return errors.New("some blobs were not copied; run the same command again to retry them")
	}
	return nil
}

// parseBlobsOrphans parses "blobs orphans [--older-than D] [--delete]".
// Objects written in the last hour are never candidates: a write may be
// on its way to being named (a task has 30 minutes).
func parseBlobsOrphans(fs *flag.FlagSet, args []string) (command, error) {
	older := fs.Duration("older-than", 24*time.Hour, "only objects written longer ago than this")
	del := fs.Bool("delete", false, "record them for the worker's sweep to delete")
	cmd, err := withFlags(fs, args, 0, nil, command{db: true, run: func(ctx context.Context, st *store.Store, out, _ io.Writer) error {
		return findOrphans(ctx, st, *older, *del, out)
	}})
	if err == nil && *older < time.Hour {
		return command{}, fmt.Errorf("blobs orphans: --older-than %s: at least 1h", *older)
	}
	return cmd, err
}

// orphanBatch is how many candidates are checked again in one statement.
const orphanBatch = 5000

// findOrphans lists the configured blob store and prints each object
// written before olderThan ago that no row names, with its size, then a
// summary. With del it records them as discards, which the worker's next
// sweep deletes (see store.DiscardUnnamed).
//
// The named keys are read first (store.NamedSet); each object the set
// does not hold is checked again in Postgres, where a key named meanwhile
// is left alone.
func findOrphans(ctx context.Context, st *store.Store, olderThan time.Duration, del bool, out io.Writer) error {
	cfg, _, err := boot.Config()
	if err != nil {
		return err
	}
	blobs, _, err := boot.Blobs(cfg)
	if err != nil {
		return err
	}
	lister, ok := blobs.(blob.Lister)
	if !ok {
		return fmt.Errorf("the %s blob store cannot list its objects", cfg.BlobBackend)
	}
	cutoff := time.Now().Add(-olderThan)
	named, err := st.NamedSet(ctx)
	if err != nil {
		return err
	}

	var listed, old, found, bytes int64
	sizes := map[string]int64{}
	check := func() error {
		if len(sizes) == 0 {
			return nil
		}
		keys := slices.Collect(maps.Keys(sizes))
		var orphans []string
		var err error
		if del {
			orphans, err = st.DiscardUnnamed(ctx, keys, cutoff)
		} else {
			orphans, err = st.UnnamedKeys(ctx, keys)
		}
		for _, k := range orphans {
			fmt.Fprintf(out, "%s\t%d\n", k, sizes[k])
			found++
			bytes += sizes[k]
		}
		clear(sizes)
		return err
	}
	err = lister.List(ctx, func(i blob.Info) error {
		listed++
		if !i.ModTime.Before(cutoff) {
			return nil
		}
		old++
		if named.Has(i.Key) {
			return nil
		}
		sizes[i.Key] = i.Size
		if len(sizes) == orphanBatch {
			return check()
		}
		return nil
	})
	if err == nil {
		err = check()
	}
	fmt.Fprintf(out, "%d objects, %d written before %s; %d named by no record (%d bytes)",
		listed, old, cutoff.UTC().Format(time.RFC3339), found, bytes)
	switch {
	case err != nil:
		fmt.Fprintln(out)
		return err
	case del:
		fmt.Fprintln(out, ", recorded for the worker's next sweep to delete")
	case found > 0:
		fmt.Fprintln(out, "; --delete has the sweep delete them")
	default:
		fmt.Fprintln(out)
	}
	return nil
}
