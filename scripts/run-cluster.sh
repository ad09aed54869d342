#!/usr/bin/env bash
# Runs a trial cluster on this machine: two `aivis serve` instances on
# loopback (https://localhost:8443 and :8444), each with its own data
# directory, sharing a PostgreSQL database (the store and the outbox), NATS
# JetStream (the bus) and Redis (the rate limits), as several machines would
# behind a load balancer (docs/scaling.md). Ctrl-C stops both.
#
# The servers are named by the same variables aivis reads, with loopback
# defaults: AIVIS_POSTGRES_URL (postgres://postgres@127.0.0.1:5432/aivis;
# the database is created if absent, which needs psql), AIVIS_NATS_URL
# (nats://127.0.0.1:4222), AIVIS_REDIS_URL (redis://127.0.0.1:6379/0),
# AIVIS_CLUSTER_NAME (aivis). CLUSTER_DATA is the directory of the trial
# (./aivis-cluster): the shared settings (aivis.json), the master key
# (master.key, made if absent) and a data directory per instance (a/, b/).
# CLUSTER_ADDRS are the instances' listen addresses ("127.0.0.1:8443
# 127.0.0.1:8444"). BIN is where aivis and the connectors are (bin).
set -euo pipefail

fail() {
	echo "run-cluster: $*" >&2
	exit 1
}

bin=${BIN:-bin}
data=${CLUSTER_DATA:-./aivis-cluster}
pg=${AIVIS_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/aivis?sslmode=disable}
nats=${AIVIS_NATS_URL:-nats://127.0.0.1:4222}
redis=${AIVIS_REDIS_URL:-redis://127.0.0.1:6379/0}
cluster=${AIVIS_CLUSTER_NAME:-aivis}
read -r -a addrs <<<"${CLUSTER_ADDRS:-127.0.0.1:8443 127.0.0.1:8444}"
names=(a b)
[ "${#addrs[@]}" = 2 ] || fail "CLUSTER_ADDRS must name two addresses"

# The trial's engines and directories are these, whatever the shell sets.
unset AIVIS_CONFIG AIVIS_DATA_DIR AIVIS_STORE AIVIS_BUS AIVIS_COUNTER AIVIS_MASTER_KEY_FILE AIVIS_ADDR

[ -x "$bin/aivis" ] || fail "no $bin/aivis: run make build first (make run-cluster does)"

# The database, created if absent, from the server's maintenance database
# "postgres". Only URLs (postgres://...) are taken apart here.
case "$pg" in
postgres://* | postgresql://*) ;;
*) fail "AIVIS_POSTGRES_URL must be a postgres:// URL here" ;;
esac
command -v psql >/dev/null 2>&1 || fail "psql is missing (Debian: apt-get install -y postgresql-client)"
rest=${pg#*://}
hostpart=${rest%%/*}
db=${rest#"$hostpart"}
db=${db#/}
query=""
case "$db" in *\?*) query="?${db#*\?}" db=${db%%\?*} ;; esac
[ -n "$db" ] || fail "AIVIS_POSTGRES_URL names no database"
case "$db" in *[!A-Za-z0-9_]*) fail "the database name \"$db\" must be letters, digits and _" ;; esac
maintenance="${pg%%://*}://$hostpart/postgres$query"
if ! exists=$(psql "$maintenance" -XtAc "SELECT 1 FROM pg_database WHERE datname = '$db'" 2>&1); then
	fail "PostgreSQL does not answer at $hostpart: $exists"
fi
if [ "$exists" != 1 ]; then
	psql "$maintenance" -Xqc "CREATE DATABASE $db" >/dev/null
	echo "database $db created"
fi

# The settings every instance and every command share, and the master key
# they all seal secrets with.
mkdir -p "$data/${names[0]}" "$data/${names[1]}"
data=$(cd "$data" && pwd)
key="$data/master.key"
if [ ! -e "$key" ]; then
	(umask 077 && head -c 32 /dev/urandom | base64 >"$key")
	echo "master key $key made (back it up with the database)"
fi
config="$data/aivis.json"
(umask 077 && cat >"$config" <<EOF
{
  "data_dir": "$data/${names[0]}",
  "store": "postgres",
  "postgres_url": "$pg",
  "bus": "nats",
  "nats_url": "$nats",
  "counter": "redis",
  "redis_url": "$redis",
  "cluster_name": "$cluster",
  "master_key_file": "$key"
}
EOF
)

# The official connectors, registered in the shared store; both instances
# find their binaries at the registered paths.
for c in "$bin"/connectors/*; do
	[ -x "$c" ] || continue
	"$bin/aivis" plugin register "$c" --config "$config" >/dev/null
	echo "connector $(basename "$c") registered"
done

pids=()
stop() {
	trap - INT TERM
	echo
	echo "stopping both instances"
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	wait # for what shows their output to show the end of it
	echo "both instances stopped"
	exit 0
}
trap stop INT TERM

# One instance after the other: each start without a user replaces the
# one-time link of the start before it, so the last printed is the one.
# Each writes to its log file, never to a pipe that Ctrl-C could close
# before it has shut down; what shows the file here, line by line marked
# with its instance, runs in the background (which ignores Ctrl-C) until
# the instance ends.
for i in 0 1; do
	name=${names[$i]}
	log="$data/$name.log"
	: >"$log"
	"$bin/aivis" serve --config "$config" --data-dir "$data/$name" --addr "${addrs[$i]}" >>"$log" 2>&1 &
	pids+=($!)
	tail -n +1 -f --pid="${pids[$i]}" "$log" | sed -u "s/^/[$name] /" &
	until grep -q '^data directory:' "$log"; do
		if ! kill -0 "${pids[$i]}" 2>/dev/null; then
			kill -TERM "${pids[@]}" 2>/dev/null || true
			wait
			fail "instance $name stopped before serving (its output is above and in $log)"
		fi
		sleep 0.2
	done
done

url() { sed -n 's/^aivis listening on \(https:.*\)$/\1/p' "$data/$1.log" | head -n 1; }
urls=("$(url "${names[0]}")" "$(url "${names[1]}")")
link=$(sed -n 's/^  \(https:.*\/join?token=.*\)$/\1/p' "$data/${names[1]}.log" | tail -n 1)
cat <<EOF

aivis cluster "$cluster" on PostgreSQL, NATS and Redis:
  instance a: ${urls[0]}/   (data directory $data/a)
  instance b: ${urls[1]}/   (data directory $data/b)
Both serve the same accounts, keys, limits and events: a load balancer would
send requests to either.
EOF
if [ -n "$link" ]; then
	cat <<EOF

Sign in: no one can yet. Open this one-time link (on either instance) to
create your account and its owner; it replaced any link printed before it:
  $link
EOF
else
	cat <<EOF

Sign in at ${urls[0]}/ or ${urls[1]}/ with your email and password.
EOF
fi
cat <<EOF
The certificates are self-signed: $data/a/tls/cert.pem and
$data/b/tls/cert.pem (fingerprints above).

Commands act on the cluster given its settings, from another terminal:
  $bin/aivis account create --config $config --name "My company" --tier starter
  $bin/aivis key create --config $config --account <account id> --name "my first key"
  curl --cacert $data/a/tls/cert.pem -H "X-API-Key: <key>" -H "X-API-Secret: <secret>" ${urls[0]}/api/v1/ai/budget-status

Ctrl-C stops both instances.
EOF
wait "${pids[@]}" || true
wait
