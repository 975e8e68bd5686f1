// Command lightbox is the operators' CLI: migrations, users and API keys.
//
//	lightbox migrate
//	lightbox users create --email E [--admin]   prints only the new API key
//	lightbox keys create --email E [--name N]   prints only the new API key
//	lightbox keys list --email E
//	lightbox keys revoke KEY_ID
//	lightbox keygen FILE                        a chain signing key, unless FILE exists
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"lightbox/chain"
	"lightbox/internal/boot"
	"lightbox/store"
)

const usage = `usage:
  lightbox migrate
  lightbox users create --email E [--admin]
  lightbox keys create --email E [--name N]
  lightbox keys list --email E
  lightbox keys revoke KEY_ID
  lightbox keygen FILE`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lightbox:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	if args[0] == "keygen" {
		if len(args) != 2 {
			return errors.New("usage: lightbox keygen FILE")
		}
		made, err := chain.GenerateKeyFile(args[1])
		if made {
			fmt.Fprintln(os.Stderr, "wrote a new chain signing key to", args[1])
		}
		return err
	}
	p, err := boot.Start()
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, st := p.Ctx, p.Store

	cmd := args[0]
	if len(args) > 1 {
		cmd += " " + args[1]
	}
	switch {
	case args[0] == "migrate":
		return nil // boot.Store has applied them
	case cmd == "users create":
		return createUser(ctx, st, args[2:], out)
	case cmd == "keys create":
		return createKey(ctx, st, args[2:], out)
	case cmd == "keys list":
		return listKeys(ctx, st, args[2:], out)
	case cmd == "keys revoke":
		return revokeKey(ctx, st, args[2:])
	}
	return errors.New(usage)
}

func createUser(ctx context.Context, st *store.Store, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("users create", flag.ContinueOnError)
	email := fs.String("email", "", "the user's email")
	admin := fs.Bool("admin", false, "may use the operator pages")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	u, err := st.CreateUser(ctx, *email, *admin)
	if err != nil {
		return err
	}
	key, _, err := st.CreateAPIKey(ctx, u.ID, "created with the user")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, key)
	return nil
}

func userFlag(name string, args []string) (*flag.FlagSet, *string, *string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	email := fs.String("email", "", "the user's email")
	keyName := fs.String("name", "", "what the key is for")
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	if *email == "" {
		return nil, nil, nil, errors.New("--email is required")
	}
	return fs, email, keyName, nil
}

func createKey(ctx context.Context, st *store.Store, args []string, out io.Writer) error {
	_, email, name, err := userFlag("keys create", args)
	if err != nil {
		return err
	}
	u, err := st.UserByEmail(ctx, *email)
	if err != nil {
		return fmt.Errorf("user %s: %w", *email, err)
	}
	key, _, err := st.CreateAPIKey(ctx, u.ID, *name)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, key)
	return nil
}

func listKeys(ctx context.Context, st *store.Store, args []string, out io.Writer) error {
	_, email, _, err := userFlag("keys list", args)
	if err != nil {
		return err
	}
	u, err := st.UserByEmail(ctx, *email)
	if err != nil {
		return fmt.Errorf("user %s: %w", *email, err)
	}
	keys, err := st.ListAPIKeys(ctx, u.ID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPREFIX\tNAME\tCREATED\tSTATE")
	for _, k := range keys {
		state := "active"
		if k.RevokedAt != nil {
			state = "revoked " + k.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Name, k.CreatedAt.UTC().Format(time.RFC3339), state)
	}
	return tw.Flush()
}

func revokeKey(ctx context.Context, st *store.Store, args []string) error {
	if len(args) != 1 {
		return errors.New("usage: lightbox keys revoke KEY_ID")
	}
	id, err := uuid.Parse(args[0])
	if err != nil {
		return fmt.Errorf("%q is not a key id", args[0])
	}
	if err := st.RevokeAPIKey(ctx, id); err != nil {
		return fmt.Errorf("key %s: %w", id, err)
	}
	return nil
}
