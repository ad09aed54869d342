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
#
# Secrets stay out of sight: the password of AIVIS_POSTGRES_URL reaches
# psql as PGPASSWORD, never on its command line, and no message shows
# more of the server than its host and port; the settings are written by
# jq, which escapes what it is given; and what the trial writes (the
# settings, the master key, the instances' logs, which hold the one-time
# link) is its user's alone (umask 077, the trial's directory 0700).
set -euo pipefail
umask 077

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
read -r -a admins <<<"${CLUSTER_ADMIN_ADDRS:-127.0.0.1:9464 127.0.0.1:9465}"
names=(a b)
[ "${#addrs[@]}" = 2 ] || fail "CLUSTER_ADDRS must name two addresses"
[ "${#admins[@]}" = 2 ] || fail "CLUSTER_ADMIN_ADDRS must name two addresses"

# The trial's engines and directories are these, whatever the shell sets.
unset AIVIS_CONFIG AIVIS_DATA_DIR AIVIS_STORE AIVIS_BUS AIVIS_COUNTER AIVIS_MASTER_KEY_FILE AIVIS_ADDR AIVIS_ADMIN_ADDR

[ -x "$bin/aivis" ] || fail "no $bin/aivis: run make build first (make run-cluster does)"

# The database, created if absent, from the server's maintenance database
# "postgres". Only URLs (postgres://...) are taken apart here:
# scheme://[user[:password]@]host[:port]/database[?parameters].
case "$pg" in
postgres://* | postgresql://*) ;;
*) fail "AIVIS_POSTGRES_URL must be a postgres:// URL here" ;;
esac
command -v psql >/dev/null 2>&1 || fail "psql is missing (Debian: apt-get install -y postgresql-client)"
command -v jq >/dev/null 2>&1 || fail "jq is missing (Debian: apt-get install -y jq)"
rest=${pg#*://}
hostpart=${rest%%/*}
db=${rest#"$hostpart"}
db=${db#/}
query=""
case "$db" in *\?*) query="?${db#*\?}" db=${db%%\?*} ;; esac
[ -n "$db" ] || fail "AIVIS_POSTGRES_URL names no database"
case "$db" in *[!A-Za-z0-9_]*) fail "the database name \"$db\" must be letters, digits and _" ;; esac
# The user and the password, apart from the host and port.
server=${hostpart##*@}
user=""
password=""
if [ "$server" != "$hostpart" ]; then
	userinfo=${hostpart%@*}
	user=${userinfo%%:*}@
	[ "$userinfo" = "${userinfo#*:}" ] || password=${userinfo#*:}
fi
# A password among the parameters goes too.
params=""
if [ -n "$query" ]; then
	IFS='&' read -r -a pairs <<<"${query#\?}"
	for pair in "${pairs[@]}"; do
		case "$pair" in
		password=*) password=${pair#password=} ;;
		*) params="$params&$pair" ;;
		esac
	done
	[ -z "$params" ] || params="?${params#&}"
fi
# URL encoding undone: %XX is the byte XX (a backslash is itself).
decode() {
	local s=${1//\\/\\\\}
	printf '%b' "${s//%/\\x}"
}
maintenance="${pg%%://*}://$user$server/postgres$params"
# psql reads the password from its environment, which only this user sees.
pgsql() {
	if [ -n "$password" ]; then
		PGPASSWORD=$(decode "$password") psql "$maintenance" "$@"
	else
		psql "$maintenance" "$@"
	fi
}
if ! exists=$(pgsql -XtAc "SELECT 1 FROM pg_database WHERE datname = '$db'" 2>&1); then
	fail "PostgreSQL does not answer at $server: $exists"
fi
if [ "$exists" != 1 ]; then
	pgsql -Xqc "CREATE DATABASE $db" >/dev/null
	echo "database $db created"
fi

# The settings every instance and every command share, and the master key
# they all seal secrets with. The trial's directory is its user's alone,
# whatever it was before.
mkdir -p "$data/${names[0]}" "$data/${names[1]}"
chmod 700 "$data"
data=$(cd "$data" && pwd)
key="$data/master.key"
if [ ! -e "$key" ]; then
	head -c 32 /dev/urandom | base64 >"$key"
	echo "master key $key made (back it up with the database)"
fi
config="$data/aivis.json"
jq -n --arg data_dir "$data/${names[0]}" --arg postgres_url "$pg" --arg nats_url "$nats" --arg redis_url "$redis" \
	--arg cluster_name "$cluster" --arg master_key_file "$key" \
	'{data_dir: $data_dir, store: "postgres", postgres_url: $postgres_url, bus: "nats", nats_url: $nats_url,
	  counter: "redis", redis_url: $redis_url, cluster_name: $cluster_name, master_key_file: $master_key_file}' >"$config.new"
mv "$config.new" "$config"

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
	rm -f "$log" # made again under the umask, whatever its mode was
	: >"$log"
	"$bin/aivis" serve --config "$config" --data-dir "$data/$name" --addr "${addrs[$i]}" --admin-addr "${admins[$i]}" >>"$log" 2>&1 &
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
