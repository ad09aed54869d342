package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipelined is an Update's transaction (a pgx.Tx) that spares it round
// trips, each of which costs both ends a wake-up: its BEGIN goes with its
// first statement, and the writes deferred to its end (the outbox's
// inserts: nothing reads their results) go with its COMMIT, each pair in
// one batch. A transaction that runs no statement costs none. Statements
// run in the order they are given, the deferred ones last: nothing in the
// transaction reads what they write.
type pipelined struct {
	pool     *pgxpool.Pool
	conn     *pgxpool.Conn
	deferred []*pgx.QueuedQuery
	open     bool // BEGIN sent
	ended    bool
}

func newPipelined(pool *pgxpool.Pool) *pipelined { return &pipelined{pool: pool} }

const beginSerializable = "BEGIN ISOLATION LEVEL SERIALIZABLE"

var _ pgx.Tx = (*pipelined)(nil)

// deferKey marks a context whose Exec may wait for the COMMIT.
type deferKey struct{}

// deferred is ctx for writes that may go with the COMMIT.
func deferred(ctx context.Context) context.Context { return context.WithValue(ctx, deferKey{}, true) }

func (p *pipelined) acquire(ctx context.Context) error {
	if p.ended {
		return pgx.ErrTxClosed
	}
	if p.conn != nil {
		return nil
	}
	c, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	p.conn = c
	return nil
}

// batch sends b, after the BEGIN if it has not been sent, and returns its
// results past the BEGIN's.
func (p *pipelined) batch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if err := p.acquire(ctx); err != nil {
		return nil, err
	}
	if p.open {
		return p.conn.SendBatch(ctx, b), nil
	}
	b.QueuedQueries = append([]*pgx.QueuedQuery{{SQL: beginSerializable}}, b.QueuedQueries...)
	br := p.conn.SendBatch(ctx, b)
	p.open = true // the rollback ends whatever came of it
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	return br, nil
}

// begun sends the BEGIN alone, for what cannot share its round trip.
func (p *pipelined) begun(ctx context.Context) error {
	if p.open {
		return nil
	}
	br, err := p.batch(ctx, &pgx.Batch{})
	if err != nil {
		return err
	}
	return br.Close()
}

func (p *pipelined) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.ended {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	if ctx.Value(deferKey{}) != nil {
		p.deferred = append(p.deferred, &pgx.QueuedQuery{SQL: sql, Arguments: args})
		return pgconn.CommandTag{}, nil
	}
	if p.open {
		return p.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := p.batch(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (p *pipelined) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.ended {
		return nil, pgx.ErrTxClosed
	}
	if p.open {
		return p.conn.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := p.batch(ctx, b)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (p *pipelined) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := p.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return firstRow{rows}
}

// batchRows are a query's rows read from a batch, which closes with them.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

// firstRow is QueryRow's row of rows, as pgx makes it.
type firstRow struct{ rows pgx.Rows }

func (r firstRow) Scan(dest ...any) error {
	rows := r.rows
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (p *pipelined) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	br, err := p.batch(ctx, b)
	if err != nil {
		return errBatch{err}
	}
	return br
}

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow{b.err} }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }

func (p *pipelined) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := p.begun(ctx); err != nil {
		return 0, err
	}
	return p.conn.CopyFrom(ctx, table, columns, src)
}

func (p *pipelined) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := p.begun(ctx); err != nil {
		return nil, err
	}
	return p.conn.Conn().Prepare(ctx, name, sql)
}

func (p *pipelined) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (p *pipelined) Conn() *pgx.Conn {
	if p.conn == nil {
		return nil
	}
	return p.conn.Conn()
}

func (p *pipelined) Begin(context.Context) (pgx.Tx, error) {
	return nil, errors.New("postgres: no nested transactions in an Update")
}

// Commit sends the deferred writes and the COMMIT in one batch (with the
// BEGIN, if no statement sent it; nothing at all if there is nothing to
// write). A transaction PostgreSQL ended as failed refuses the COMMIT
// (pgx.ErrTxCommitRollback), as pgx's own does.
func (p *pipelined) Commit(ctx context.Context) error {
	if p.ended {
		return pgx.ErrTxClosed
	}
	if !p.open && len(p.deferred) == 0 {
		p.end()
		return nil
	}
	qs := append(p.deferred, &pgx.QueuedQuery{SQL: "COMMIT"})
	p.deferred = nil
	br, err := p.batch(ctx, &pgx.Batch{QueuedQueries: qs})
	if err != nil {
		return err
	}
	var tag pgconn.CommandTag
	for range qs {
		if tag, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err // the rollback that follows ends it
	}
	p.end()
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback ends the transaction, if it began, and gives the connection
// back.
func (p *pipelined) Rollback(ctx context.Context) error {
	if p.ended {
		return pgx.ErrTxClosed
	}
	var err error
	if p.open && p.conn != nil {
		_, err = p.conn.Exec(ctx, "ROLLBACK")
		if err != nil {
			// In an unknown state: not given back to the pool.
			p.conn.Conn().Close(ctx)
		}
	}
	p.end()
	return err
}

func (p *pipelined) end() {
	p.ended = true
	p.deferred = nil
	if p.conn != nil {
		p.conn.Release()
		p.conn = nil
	}
}
