package engines

import (
	"context"
	"errors"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/schema"
)

// openPostgres opens the database of postgres_url, migrating it as policy
// allows, its reads cached under its signal; this process is one of its
// holders. Its outbox is a *buspg.Outbox, for the bus of the settings.
func openPostgres(ctx context.Context, cfg config.Config, box *secrets.Box, policy ...schema.Policy) (Opened, error) {
	db, err := postgres.OpenWith(ctx, cfg.PostgresURL, box, schema.Of(policy))
	if err != nil {
		return Opened{}, err
	}
	db.ForBus(cfg.Bus)
	return Opened{Store: cache.Wrap(db, db.Signal()), Outbox: db.Outbox(), Holder: db.Holder(),
		Instrument: func(m *metrics.Metrics) {
			db.SetMetrics(m.Store)
			m.WatchPool("store", func() metrics.PoolStats { return postgres.PoolStats(db.Pool()) })
		}}, nil
}

// checkPostgres refuses store postgres without its database or without
// the master key: instances that share the database each have a data
// directory of their own, and a key made in each would seal what the
// others cannot open.
func checkPostgres(cfg config.Config) error {
	var errs []error
	if cfg.PostgresURL == "" {
		errs = append(errs, errors.New("store postgres needs postgres_url (AIVIS_POSTGRES_URL, --postgres-url)"))
	}
	if cfg.MasterKeyFile == "" {
		errs = append(errs, errors.New("store postgres needs master_key_file (AIVIS_MASTER_KEY_FILE, --master-key-file): "+
			"every instance seals and opens the stored secrets with the one master key it is given"))
	}
	return errors.Join(errs...)
}
