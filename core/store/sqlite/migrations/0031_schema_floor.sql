-- +goose Up
-- The lowest schema an aivis must know to run on this database: the
-- newest migration applied that is marked "-- Contract:" (it drops or
-- changes what an earlier aivis reads). An aivis that finds the database
-- newer than itself runs on it when it knows this version, as during a
-- rolling upgrade, and refuses it otherwise. aivis writes it as it
-- migrates.
CREATE TABLE schema_floor (version INTEGER NOT NULL) STRICT;
INSERT INTO schema_floor (version) VALUES (0);

-- +goose Down
DROP TABLE schema_floor;
