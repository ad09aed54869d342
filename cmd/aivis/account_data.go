package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/store"
)

func accountExportCmd() *cobra.Command {
	var out string
	c := &cobra.Command{Use: "export ACCOUNT_ID", Short: "Export everything an account owns as JSON lines, secrets excluded",
		Long: `Export everything an account owns as JSON lines, secrets excluded

One record a line, {"kind": TABLE, "data": {COLUMN: VALUE}}, the account
first, read in one consistent snapshot; the last line is {"kind": "end",
"data": {"records": N}}. Sealed secrets, key and secret hashes, password
hashes and session tokens are never in it. Without --out it goes to the
standard output.`,
		Args: takes(1, "ACCOUNT_ID")}
	c.Flags().StringVar(&out, "out", "", "write to FILE, a new file (mode 0600), rather than the standard output")
	return withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		return exportAccount(ctx, in.svc.Store, args[0], out, in.stdout)
	})
}

// exportAccount writes the account's export to the new file out, or to
// stdout when out is "". A file is made only when the account exists, and
// is removed when the export fails.
func exportAccount(ctx context.Context, st accounts.Exporter, id, out string, stdout io.Writer) error {
	if out == "" {
		return explain(accounts.Export(ctx, st, id, stdout))
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%s exists: the export is written to a new file only", out)
	}
	w := &lazyFile{path: out}
	err := accounts.Export(ctx, st, id, w)
	if w.file != nil {
		if cerr := w.file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out)
		}
	}
	return explain(err)
}

// lazyFile makes its file at the first write.
type lazyFile struct {
	path string
	file *os.File
}

func (l *lazyFile) Write(b []byte) (int, error) {
	if l.file == nil {
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return 0, err
		}
		l.file = f
	}
	return l.file.Write(b)
}

func accountDeleteCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{Use: "delete ACCOUNT_ID", Short: "Delete an account and everything it owns (cannot be undone)",
		Long: `Delete an account and everything it owns (cannot be undone)

Its clients, keys, users and their sessions, invitations, webhooks and
connections, deliveries and their attempts, events, domains, scans and their
answers, readings, content requests, budgets and usage. Its keys are refused
by every instance from the first step on, and its pending deliveries are not
attempted. Big accounts are deleted in batches: a delete that stopped is
finished by running it again. On a terminal it asks for the account's id to
confirm; otherwise --yes is needed.`,
		Args: takes(1, "ACCOUNT_ID")}
	c.Flags().BoolVar(&yes, "yes", false, "delete without asking (needed when the standard input is not a terminal)")
	return withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		return deleteAccount(ctx, in.svc.Store, args[0], yes, c.InOrStdin(), in.stderr, in.out)
	})
}

// deleter is the store's part deleteAccount needs.
type deleter interface {
	Account(ctx context.Context, id string) (store.Account, error)
	accounts.Deleter
}

// deleteAccount deletes the account once confirmed: by yes, or by its id
// typed on stdin when stdin is a terminal.
func deleteAccount(ctx context.Context, st deleter, id string, yes bool, stdin io.Reader, stderr io.Writer, out printer) error {
	a, err := st.Account(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no account %s", id)
	}
	if err != nil {
		return err
	}
	if !yes {
		if !terminal(stdin) {
			return usageError("deleting account %s (%q) cannot be undone: pass --yes to delete it without a terminal to confirm on", a.ID, a.Name)
		}
		fmt.Fprintf(stderr, "Delete account %s (%q) and everything it owns? This cannot be undone.\nType the account's id to confirm: ", a.ID, a.Name)
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		if strings.TrimSpace(line) != a.ID {
			return fmt.Errorf("not deleted: what was typed is not the account's id")
		}
	}
	if err := accounts.Delete(ctx, st, a.ID); err != nil {
		return explain(err)
	}
	return out.value(map[string]any{"id": a.ID, "deleted": true}, fmt.Sprintf("account %s %q deleted, with everything it owned\n", a.ID, a.Name))
}

// terminal reports whether r is a terminal: a character device other
// than the null device.
func terminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
