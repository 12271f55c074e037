package db

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// SchemaState reads which of fsys's migrations the database has applied
// and which are pending, changing nothing (goose's own status creates its
// version table): with MIGRATE_ON_START=false the start checks the schema
// it was told to leave alone.
func SchemaState(ctx context.Context, p *Pool, fsys fs.FS) (applied, pending []int64, err error) {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, nil, fmt.Errorf("schema: migrations: %w", err)
	}
	var exists bool
	if err := p.pool.QueryRow(ctx, "SELECT to_regclass('goose_db_version') IS NOT NULL").Scan(&exists); err != nil {
		return nil, nil, fmt.Errorf("schema: %w", err)
	}
	done := map[int64]bool{}
	if exists {
		// The newest row of each version says whether it is applied now.
		rows, err := p.pool.Query(ctx, "SELECT DISTINCT ON (version_id) version_id, is_applied FROM goose_db_version ORDER BY version_id, id DESC")
		if err != nil {
			return nil, nil, fmt.Errorf("schema: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var v int64
			var ok bool
			if err := rows.Scan(&v, &ok); err != nil {
				return nil, nil, fmt.Errorf("schema: %w", err)
			}
			done[v] = ok
		}
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("schema: %w", err)
		}
	}
	for _, f := range files {
		prefix, _, _ := strings.Cut(path.Base(f), "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil {
			continue // not a migration (goose skips it too)
		}
		if done[v] {
			applied = append(applied, v)
		} else {
			pending = append(pending, v)
		}
	}
	slices.Sort(applied)
	slices.Sort(pending)
	return applied, pending, nil
}
