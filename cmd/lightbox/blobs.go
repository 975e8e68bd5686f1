package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"lightbox/blob"
	"lightbox/config"
	"lightbox/internal/boot"
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
