package filestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// The search index's catch-up: which logs changed since the index
// recorded them, and indexing them, in transactions of about
// catchUpBatch items.

// sessionRecords returns the up-to-date records of the main sessions of
// project (every project when it is ""), as List sees them: logs that
// hold no entry are left out. Projects are listed in parallel (a stat per
// log is most of the work).
func (s *Store) sessionRecords(ctx context.Context, project string) ([]*record, error) {
	projects := []string{project}
	if project == "" {
		var err error
		if projects, err = s.projectNames(); err != nil {
			return nil, err
		}
	}
	recs := make([][]*record, len(projects))
	errs := make([]error, len(projects))
	next := make(chan int, len(projects))
	for i := range projects {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(len(projects), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range next {
				recs[i], errs[i] = s.freshRecords(ctx, s.project(projects[i]), "")
			}
		})
	}
	wg.Wait()
	n := 0
	for i, name := range projects {
		if errs[i] != nil {
			return nil, fmt.Errorf("%s: %w", name, errs[i])
		}
		n += len(recs[i])
	}
	out := make([]*record, 0, n)
	for _, rs := range recs {
		for _, r := range rs {
			if !r.empty && r.key.IsMain() {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// logChanges is the answer to catch-up's one question: which main logs
// of a project (every project when "") changed since the index recorded
// them.
type logChanges struct {
	// listed are the records of the sessions searched: the main logs
	// that hold an entry, as they are now.
	listed []*record
	// stale are those of the listed logs the index does not hold as they
	// are now (new, grown, rewritten or replaced).
	stale []*record
	// gone are the index's rows of logs of the project that are no
	// longer listed.
	gone []*indexedLog
	// known is how many of the listed records were among those known.
	known int
}

// changedLogs answers which main logs of project (every project when "")
// changed since the index recorded them in rows: it asks the project
// indexes for their up to date records (from the index journal alone when
// it can be believed, else a stat per log; see Store.records) and
// compares each log's inode, committed end and tail
// checksum with those of its row. known are records found current before
// (nil for none); a record is immutable, so one known is current without
// a look at rows. It is the only place catch-up learns of changes to the
// logs, so a listing that knows which logs changed without a stat can
// answer it alone.
func (s *Store) changedLogs(ctx context.Context, project string, rows map[recall.Key]*indexedLog, known map[*record]*indexedLog) (logChanges, error) {
	recs, err := s.sessionRecords(ctx, project)
	if err != nil {
		return logChanges{}, err
	}
	ch := logChanges{listed: recs}
	indexed := 0 // listed logs that have a row
	for _, rec := range recs {
		if known[rec] != nil {
			indexed++
			ch.known++
			continue
		}
		r := rows[rec.key]
		if r != nil {
			indexed++
		}
		if !r.current(rec) {
			ch.stale = append(ch.stale, rec)
		}
	}
	inProject := len(rows)
	if project != "" {
		inProject = 0
		for k := range rows {
			if k.Project == project {
				inProject++
			}
		}
	}
	if indexed < inProject { // some row is of a log not listed
		listed := make(map[recall.Key]bool, len(recs))
		for _, rec := range recs {
			listed[rec.key] = true
		}
		for k, r := range rows {
			if (project == "" || k.Project == project) && !listed[k] {
				ch.gone = append(ch.gone, r)
			}
		}
	}
	return ch, nil
}

// catchUp brings the index's rows of project (every project when "") up
// to date with the logs, and returns the rows of the sessions searched,
// by id, which the caller must not change. The caller holds x.mu and has
// opened the index. Errors of the index are indexErrs; errors reading
// the logs are returned as they are.
//
// progress, when not nil, is called with how many of the stale sessions
// are indexed, before the first and after each.
func (x *searchIndex) catchUp(ctx context.Context, s *Store, project string, progress func(done, total int)) (map[int64]*indexedLog, error) {
	rows, err := x.indexedLogs(ctx)
	if err != nil {
		return nil, ixErr(err)
	}
	var known map[*record]*indexedLog
	if x.last != nil && x.last.project == project {
		known = x.last.rows
	}
	var gen uint64
	genOK := false
	if project != "" {
		gen, genOK = s.project(project).generation()
		if genOK && known != nil && x.last.genOK && x.last.gen == gen {
			return x.last.byID, nil // no record changed, and no row (indexedLogs)
		}
	}
	ch, err := s.changedLogs(ctx, project, rows, known)
	if err != nil {
		return nil, err
	}
	if len(ch.stale) > 0 || len(ch.gone) > 0 {
		err := x.update(ctx, s, ch.stale, ch.gone, progress)
		x.logs, x.last = nil, nil // written: read again
		if err != nil {
			return nil, err
		}
		if rows, err = x.indexedLogs(ctx); err != nil {
			return nil, ixErr(err)
		}
	} else if known != nil && ch.known == len(ch.listed) && ch.known == len(known) {
		// The same records as the last catch-up, and the same rows.
		x.last.gen, x.last.genOK = gen, genOK
		return x.last.byID, nil
	}
	// Only the sessions listed: not one another process indexed since.
	last := &caughtUp{project: project, rows: make(map[*record]*indexedLog, len(ch.listed)), byID: make(map[int64]*indexedLog, len(ch.listed)),
		gen: gen, genOK: genOK}
	for _, rec := range ch.listed {
		r := rows[rec.key]
		if r == nil {
			continue
		}
		last.byID[r.id] = r
		if r.current(rec) {
			last.rows[rec] = r
		}
	}
	x.last = last
	return last.byID, nil
}

// update indexes the stale logs and drops the gone ones, in transactions
// of about catchUpBatch items, each log whole in one. Every row is read
// again inside the transaction: another process may have done the work.
func (x *searchIndex) update(ctx context.Context, s *Store, stale []*record, gone []*indexedLog, progress func(done, total int)) error {
	var tx *sql.Tx
	written := 0
	commit := func() error {
		if tx == nil {
			return nil
		}
		err := tx.Commit()
		tx, written = nil, 0
		return ixErr(err)
	}
	begin := func() error {
		if tx != nil {
			return nil
		}
		var err error
		tx, err = x.conn.BeginTx(ctx, nil)
		return ixErr(err)
	}
	defer func() {
		if tx != nil {
			tx.Rollback()
		}
	}()
	for _, r := range gone {
		if err := begin(); err != nil {
			return err
		}
		if err := dropLog(ctx, tx, r.id); err != nil {
			return ixErr(err)
		}
	}
	if progress != nil && len(stale) > 0 {
		progress(0, len(stale))
	}
	for i, rec := range stale {
		if err := begin(); err != nil {
			return err
		}
		n, err := indexLog(ctx, tx, s, rec.key)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(i+1, len(stale))
		}
		if written += n; written >= catchUpBatch {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	return commit()
}

// dropLog removes a log's row and its items.
func dropLog(ctx context.Context, tx *sql.Tx, id int64) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM items_fts WHERE rowid IN (SELECT id FROM items WHERE log = ?)", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM items WHERE log = ?", id); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "DELETE FROM logs WHERE id = ?", id)
	return err
}

// indexLog brings the rows of key's log up to date inside tx: from the end
// its row reached when the log is the same file and still holds the bytes
// seen there, else from the start. It returns how many items it wrote.
func indexLog(ctx context.Context, tx *sql.Tx, s *Store, key recall.Key) (int, error) {
	l, err := s.locate(key)
	if err != nil {
		return 0, err
	}
	row, err := scanLog(tx.QueryRowContext(ctx, "SELECT "+logColumns+" FROM logs WHERE project = ? AND session = ?", key.Project, key.Session))
	if errors.Is(err, sql.ErrNoRows) {
		row, err = nil, nil
	}
	if err != nil {
		return 0, ixErr(err)
	}
	f, st, ok, err := openLog(l)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", l.path, err)
	}
	if !ok { // removed since it was listed
		if row != nil {
			return 0, ixErr(dropLog(ctx, tx, row.id))
		}
		return 0, nil
	}
	defer f.Close()

	from := int64(0)
	m := recall.Meta{Key: key}
	head, err := headCheck(f, st.Size)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", l.path, err)
	}
	// The log the row describes, grown: the same inode, its bytes before
	// the row's end as they were, and the same first bytes, which hold its
	// first entry's time: a session removed and made again may get the
	// inode back and end in the same bytes (an entry's time is at its
	// line's start). A row of an older index knows no head (-1).
	if row != nil && row.ino == st.Ino && st.Size >= row.off && (row.head < 0 || row.head == int64(head)) {
		if c, err := tailCheck(f, row.off); err == nil && c == row.chk {
			var raw string
			if err := tx.QueryRowContext(ctx, "SELECT meta FROM logs WHERE id = ?", row.id).Scan(&raw); err != nil {
				return 0, ixErr(err)
			}
			if json.Unmarshal([]byte(raw), &m) == nil {
				from = row.off
			} else {
				m = recall.Meta{Key: key}
			}
		}
	}
	id := int64(0)
	switch {
	case row == nil:
		err = tx.QueryRowContext(ctx, `INSERT INTO logs(project, session, ino, off, chk, meta, title, ntitle, upd_s, upd_n, archived)
			VALUES (?, ?, 0, 0, 0, '{}', '', '', 0, 0, 0) RETURNING id`, key.Project, key.Session).Scan(&id)
	case from == 0: // rewritten or replaced: start over
		id = row.id
		if _, err = tx.ExecContext(ctx, "DELETE FROM items_fts WHERE rowid IN (SELECT id FROM items WHERE log = ?)", id); err == nil {
			_, err = tx.ExecContext(ctx, "DELETE FROM items WHERE log = ?", id)
		}
	default:
		id = row.id
	}
	if err != nil {
		return 0, ixErr(err)
	}

	w, err := newLogIndexer(ctx, tx, id)
	if err != nil {
		return 0, ixErr(err)
	}
	defer w.close()
	var pos, n int64
	sc := scanner{
		at: func(p, l int64) { pos, n = p, l },
		emit: func(e recall.Entry) {
			m.Apply(e)
			w.entry(e, pos, n)
		},
	}
	if err := sc.scanFile(ctx, f, from, st.Size); err != nil {
		return 0, err
	}
	if w.err != nil {
		return 0, ixErr(w.err)
	}
	m.Corrupt += sc.corrupt
	check, err := tailCheck(f, sc.end)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", l.path, err)
	}
	js, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE logs SET ino = ?, off = ?, chk = ?, head = ?, meta = ?, title = ?, ntitle = ?, upd_s = ?, upd_n = ?, archived = ? WHERE id = ?`,
		int64(st.Ino), sc.end, int64(check), int64(head), string(js), m.Title, search.Normalize(m.Title),
		m.Updated.Unix(), m.Updated.Nanosecond(), hiddenState(m), id)
	return w.written, ixErr(err)
}

// logIndexer applies a log's entries to its items, as recall.Replay
// applies them to the view: an item is added live; a pop or remove takes
// the item it names out of the view; a clear or a compaction takes every
// item out, and a compaction adds its own. Every item stays, for
// SearchOptions.WholeLog.
type logIndexer struct {
	ctx     context.Context
	log     int64
	insert  *sql.Stmt
	fts     *sql.Stmt
	kill    *sql.Stmt
	killAll *sql.Stmt
	written int
	err     error
}

func newLogIndexer(ctx context.Context, tx *sql.Tx, log int64) (*logIndexer, error) {
	w := &logIndexer{ctx: ctx, log: log}
	for _, st := range []struct {
		p *(*sql.Stmt)
		q string
	}{
		{&w.insert, "INSERT INTO items(log, seq, idx, pos, len, ts, tn, role, live, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?) RETURNING id"},
		{&w.fts, "INSERT INTO items_fts(rowid, text) VALUES (?, ?)"},
		{&w.kill, "UPDATE items SET live = 0 WHERE log = ? AND seq = ? AND idx = ? AND live = 1"},
		{&w.killAll, "UPDATE items SET live = 0 WHERE log = ? AND live = 1"},
	} {
		s, err := tx.PrepareContext(ctx, st.q)
		if err != nil {
			w.close()
			return nil, err
		}
		*st.p = s
	}
	return w, nil
}

func (w *logIndexer) close() {
	for _, s := range []*sql.Stmt{w.insert, w.fts, w.kill, w.killAll} {
		if s != nil {
			s.Close()
		}
	}
}

// entry applies one entry whose line lies at [pos, pos+n) of the log.
func (w *logIndexer) entry(e recall.Entry, pos, n int64) {
	if w.err != nil {
		return
	}
	switch e.Kind {
	case recall.KindItem:
		if it, ok := e.Item(); ok {
			w.item(e, 0, it, pos, n)
		}
	case recall.KindPop, recall.KindRemove:
		var ref recall.ItemRef
		if json.Unmarshal(e.Data, &ref) == nil {
			_, w.err = w.kill.ExecContext(w.ctx, w.log, ref.Seq, ref.Index)
		}
	case recall.KindClear:
		_, w.err = w.killAll.ExecContext(w.ctx, w.log)
	case recall.KindCompaction:
		var c recall.Compaction
		if json.Unmarshal(e.Data, &c) == nil {
			if _, w.err = w.killAll.ExecContext(w.ctx, w.log); w.err != nil {
				return
			}
			for i, it := range c.Items {
				w.item(e, i, it, pos, n)
			}
		}
	}
}

// item adds an item with text to the view; one with no text is never a
// hit and needs no row (a removal naming it then changes nothing).
func (w *logIndexer) item(e recall.Entry, index int, it recall.Item, pos, n int64) {
	if w.err != nil {
		return
	}
	role, text := search.Text(it)
	if text == "" {
		return
	}
	norm := search.Normalize(text)
	var id int64
	if w.err = w.insert.QueryRowContext(w.ctx, w.log, e.Seq, index, pos, n, e.Time.Unix(), e.Time.Nanosecond(), roleNumber(role), norm).Scan(&id); w.err != nil {
		return
	}
	_, w.err = w.fts.ExecContext(w.ctx, id, norm+" ")
	w.written++
}
