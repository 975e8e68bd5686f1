package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"lightbox/config"
	"lightbox/store"
)

// limitFlag is one of a user's own quota limits on the command line:
// "default" (the server's QUOTA_* setting applies), "none", or a number.
type limitFlag struct {
	set   bool
	value *int64
	size  bool // a number of bytes, with an optional KiB..TiB suffix
}

func (f *limitFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return formatLimit(f.value)
}

func (f *limitFlag) Set(s string) error {
	f.set = true
	switch s {
	case "default":
		f.value = nil
		return nil
	case "none":
		f.value = new(int64)
		return nil
	}
	var n int64
	var err error
	if f.size {
		n, err = config.ParseSize(s)
	} else {
		n, err = strconv.ParseInt(s, 10, 64)
		if err == nil && (n < 0 || n > 1<<31-1) {
			err = strconv.ErrRange
		}
	}
	if err != nil {
		return fmt.Errorf("%q is not default, none or a limit", s)
	}
	f.value = &n
	return nil
}

// formatLimit shows a user's own limit as the command takes it.
func formatLimit(v *int64) string {
	switch {
	case v == nil:
		return "default"
	case *v == 0:
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}

// parseQuota is `users quota`: with no limit flags it shows the user's
// limits and usage; with some it sets those and leaves the others.
func parseQuota(fs *flag.FlagSet, args []string) (command, error) {
	email := fs.String("email", "", "the user's email")
	bytes := &limitFlag{size: true}
	files := &limitFlag{}
	exports := &limitFlag{}
	fs.Var(bytes, "bytes", "bytes of originals kept and uploads in flight")
	fs.Var(files, "files-in-flight", "uploads prepared and not yet finalized")
	fs.Var(exports, "exports", "exports queued, running or ready")
	return withFlags(fs, args, 0, []string{"email"}, command{db: true, run: func(ctx context.Context, st *store.Store, out, _ io.Writer) error {
		u, err := st.UserByEmail(ctx, *email)
		if err != nil {
			return fmt.Errorf("user %s: %w", *email, err)
		}
		usage, err := st.Usage(ctx, u.ID)
		if err != nil {
			return err
		}
		if bytes.set || files.set || exports.set {
			q := store.Quotas{Bytes: usage.QuotaBytes, FilesInFlight: usage.QuotaFilesInFlight, Exports: usage.QuotaExports}
			if bytes.set {
				q.Bytes = bytes.value
			}
			if files.set {
				q.FilesInFlight = toInt(files.value)
			}
			if exports.set {
				q.Exports = toInt(exports.value)
			}
			if err := st.SetQuotas(ctx, u.ID, q); err != nil {
				return err
			}
			if usage, err = st.Usage(ctx, u.ID); err != nil {
				return err
			}
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "QUOTA\tLIMIT\tUSED")
		fmt.Fprintf(tw, "bytes\t%s\t%d\n", formatLimit(usage.QuotaBytes), usage.BytesUsed())
		fmt.Fprintf(tw, "files-in-flight\t%s\t%d\n", formatLimit(toInt64(usage.QuotaFilesInFlight)), usage.FilesInFlight)
		fmt.Fprintf(tw, "exports\t%s\t%d\n", formatLimit(toInt64(usage.QuotaExports)), usage.Exports)
		return tw.Flush()
	}})
}

func toInt(v *int64) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

func toInt64(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}
