# Shared by the scripts in this folder (sourced, not run): the build
# dependencies, and the local Redis and PostgreSQL that `make run` and
# `make test` start when REDIS_URL / DATABASE_URL are not set.
#
# Our servers listen on loopback ports of their own and keep everything under
# .data/, so they never meet a system service:
#   .data/redis/     redis.conf, redis.pid, redis.log, the AOF
#   .data/postgres/  data/ (the cluster), run/ (its socket), postgres.log
#   .data/s3/        Versity's S3 gateway: data/ (its POSIX backend, one
#                    folder per bucket), credentials, versitygw.pid, .log;
#                    started for the tests and for BLOB_BACKEND=s3 only
#   .data/bin/       versitygw, built once from its Go module
#   .data/ml/        the face sidecar (faces/sidecar/): ml.pid (its supervisor), ml.log,
#                    secret (its callers' shared secret, made once);
#                    started for faces only (see ml_up)
#
# Settings (environment):
#   LIGHTBOX_REDIS_PORT  default 56379
#   LIGHTBOX_PG_PORT     default 55432
#   LIGHTBOX_S3_PORT     default 57070
#   LIGHTBOX_ML_PORT     default 57080
#   LIGHTBOX_FACES       auto (default), on or off: whether `make run` starts
#                        the face sidecar; auto starts it when Node.js 20 is
#                        installed and FACES_URL names no other provider
#   LIGHTBOX_PG_FSYNC    on (default) or off: off trades crash safety for
#                        speed and only applies when we start the server

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA=$ROOT/.data
REDIS_PORT=${LIGHTBOX_REDIS_PORT:-56379}
PG_PORT=${LIGHTBOX_PG_PORT:-55432}
REDIS_DIR=$DATA/redis
PG_ROOT=$DATA/postgres
S3_PORT=${LIGHTBOX_S3_PORT:-57070}
S3_DIR=$DATA/s3
VERSITYGW_VERSION=v1.8.0
# S3_WANTED=1 makes services_up start the S3 server too.
S3_WANTED=${S3_WANTED:-}
ML_PORT=${LIGHTBOX_ML_PORT:-57080}
ML_DIR=$DATA/ml
ML_SRC=$ROOT/faces/sidecar

# STARTED lists the services this process started, so that it stops those and
# leaves alone the ones it found running.
STARTED=()

say() { printf 'lightbox: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}
is_root() { [ "$(id -u)" = 0 ]; }

# CHILD is the long command run_child is waiting for, if any.
CHILD=

# run_child runs "$@" in a process group of its own and waits for it,
# returning its status. Bash runs a trap only once its foreground command
# has ended, so a SIGTERM sent to the script alone (by a supervisor, or by
# make passing it on) would wait for a whole build or test run while the
# services kept running; `wait` gives way to the trap at once, and the trap
# ends the child's group with stop_child. Ctrl-C reaches the child through
# the trap too.
run_child() {
	set -m
	"$@" <&0 &
	CHILD=$!
	set +m
	local rc=0
	wait "$CHILD" || rc=$?
	CHILD=
	return $rc
}

# stop_child SIGNAL sends SIGNAL to the group of the command run_child is
# waiting for, and waits for it to end.
stop_child() {
	[ -n "$CHILD" ] || return 0
	kill -"$1" -- -"$CHILD" 2>/dev/null || true
	wait "$CHILD" 2>/dev/null || true
	CHILD=
}

# apt_install WHY PACKAGE... installs Debian packages when we are root and
# otherwise says what to install.
APT_UPDATED=
apt_install() {
	local why=$1
	shift
	if ! is_root; then
		die "$why: install it with: sudo apt-get install -y $*"
	fi
	command -v apt-get >/dev/null || die "$why, and there is no apt-get here: install $* by hand"
	say "$why: apt-get install $*"
	# Keep apt from starting the system's own Redis or PostgreSQL service:
	# we run ours on our own ports.
	local policy=/usr/sbin/policy-rc.d made= rc=0
	if [ ! -e $policy ]; then
		printf '#!/bin/sh\nexit 101\n' >$policy
		chmod 755 $policy
		made=1
	fi
	if [ -z "$APT_UPDATED" ]; then
		apt-get update -qq >&2 || rc=$?
		APT_UPDATED=1
	fi
	if [ $rc = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 || rc=$?
	fi
	[ -z "$made" ] || rm -f $policy
	[ $rc = 0 ] || die "apt-get install $* failed"
}

# ensure_build_deps checks for Go and what the cgo imaging code needs.
ensure_build_deps() {
	if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
		export PATH=$PATH:/usr/local/go/bin
	fi
	command -v go >/dev/null ||
		die "Go is not installed: install the Go toolchain (the version go.mod names, or newer) so that 'go' is on PATH, for example in /usr/local/go"
	local missing=()
	command -v gcc >/dev/null || missing+=(gcc libc6-dev)
	command -v pkg-config >/dev/null || missing+=(pkg-config)
	pkg-config --exists vips 2>/dev/null || missing+=(libvips-dev)
	# libvips-dev brings it today; the imaging code links it directly too.
	pkg-config --exists libjpeg 2>/dev/null || missing+=(libjpeg62-turbo-dev)
	command -v vipsthumbnail >/dev/null || missing+=(libvips-tools)
	pkg-config --exists libraw 2>/dev/null || missing+=(libraw-dev)
	command -v dcraw_emu >/dev/null || missing+=(libraw-bin)
	# The XMP tests read what they write back with exiftool.
	command -v exiftool >/dev/null || missing+=(libimage-exiftool-perl)
	if [ ${#missing[@]} -gt 0 ]; then
		apt_install "building needs ${missing[*]} (libvips and LibRaw through cgo)" "${missing[@]}"
	fi
}

# wait_port_free PORT SETTING waits a little for a busy port. Our ports lie in
# Linux's ephemeral range, so a client connection elsewhere may hold one for a
# while; a listener that is not ours is reported at once.
wait_port_free() {
	command -v ss >/dev/null || return 0
	local i
	for i in $(seq 30); do
		if [ -n "$(ss -Htln "sport = :$1")" ]; then
			die "another program listens on port $1: stop it, or set $2 to another port"
		fi
		# (TIME-WAIT does not count: both servers bind with SO_REUSEADDR.)
		[ -n "$(ss -Htan exclude time-wait "sport = :$1")" ] || return 0
		[ "$i" != 1 ] || say "port $1 is held by a connection; waiting up to 15 s for it"
		sleep 0.5
	done
	die "port $1 is still in use: set $2 to another port"
}

# ---- Redis ----------------------------------------------------------------

redis_url() { echo "redis://127.0.0.1:$REDIS_PORT/0"; }

# redis_pid prints the pid of the Redis we started, if it is alive.
redis_pid() {
	local pid
	pid=$(cat "$REDIS_DIR/redis.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = redis-server ] && echo "$pid"
}

redis_answers() {
	[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]
}

# ensure_redis installs Redis and its Sentinel (the same server in another
# mode: the failover test in e2e/ starts its own primary, replica and
# sentinels) when either is missing.
ensure_redis() {
	if ! command -v redis-server >/dev/null || ! command -v redis-sentinel >/dev/null; then
		apt_install "Redis or Redis Sentinel is not installed" redis-server redis-sentinel
		command -v redis-server >/dev/null || die "redis-server is still not on PATH after apt-get install redis-server"
		command -v redis-sentinel >/dev/null || die "redis-sentinel is still not on PATH after apt-get install redis-sentinel"
	fi
}

redis_up() {
	ensure_redis
	local pid
	if pid=$(redis_pid); then
		if redis_answers; then
			say "reusing Redis at $(redis_url) (pid $pid)"
			return 0
		fi
		die "our Redis (pid $pid, in ${REDIS_DIR#"$ROOT"/}) does not answer on port $REDIS_PORT; was LIGHTBOX_REDIS_PORT different when it started? Stop it with: make services-stop"
	fi
	if redis_answers; then
		die "a Redis that is not ours answers on port $REDIS_PORT: stop it, or set LIGHTBOX_REDIS_PORT or REDIS_URL"
	fi
	wait_port_free "$REDIS_PORT" LIGHTBOX_REDIS_PORT
	mkdir -p "$REDIS_DIR"
	rm -f "$REDIS_DIR/redis.pid"
	# Written on every start, so a change here applies at the next one.
	# Tests isolate themselves by database index, hence the 1024 databases.
	cat >"$REDIS_DIR/redis.conf" <<-EOF
		# Written by scripts/lib.sh at every start.
		bind 127.0.0.1
		port $REDIS_PORT
		protected-mode yes
		daemonize yes
		pidfile "$REDIS_DIR/redis.pid"
		logfile "$REDIS_DIR/redis.log"
		dir "$REDIS_DIR"
		databases 1024
		appendonly yes
	EOF
	redis-server "$REDIS_DIR/redis.conf" >&2 9>&- || die "redis-server did not start: see $REDIS_DIR/redis.log"
	# It daemonizes before it binds and writes its pid file: allow 1 s
	# before taking a missing pid for a dead server.
	wait_answers redis_answers redis_pid 10 "$REDIS_DIR/redis.log" "Redis did not answer on port $REDIS_PORT"
	STARTED+=(redis)
	say "started Redis at $(redis_url), data in ${REDIS_DIR#"$ROOT"/}"
}

redis_stop() {
	local pid
	if ! pid=$(redis_pid); then
		say "Redis: ours is not running"
		return 0
	fi
	# SIGTERM makes Redis flush the AOF and exit.
	term_wait Redis "$pid" 30
}

# wait_answers ANSWERS PID GRACE LOG MESSAGE waits up to 10 s for the command
# ANSWERS to succeed, trying every 0.1 s. From the GRACE-th try on, it stops
# early once the command PID finds no process. If the server never answers,
# it shows the tail of LOG and dies with MESSAGE.
wait_answers() {
	local i
	for i in $(seq 100); do
		"$1" && return 0
		[ "$i" -lt "$3" ] || "$2" >/dev/null || break
		sleep 0.1
	done
	"$1" && return 0
	tail -n 20 "$4" >&2 || true
	die "$5: see $4"
}

# term_wait NAME PID SECONDS sends SIGTERM and waits for the exit.
term_wait() {
	local i
	kill -TERM "$2"
	for i in $(seq $(($3 * 10))); do
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$2" 2>/dev/null; then
		say "$1 (pid $2) did not stop within $3 s"
		return 1
	fi
	say "stopped $1 (pid $2)"
}

# ---- PostgreSQL -------------------------------------------------------------

pg_url() { echo "postgres://lightbox@127.0.0.1:$PG_PORT/lightbox?sslmode=disable"; }

# pg_bindir prints the directory of Debian's PostgreSQL server programs,
# preferring the version that made an existing cluster.
pg_bindir() {
	local v d
	if [ -n "${PG_BINDIR:-}" ]; then
		echo "$PG_BINDIR"
		return 0
	fi
	v=$(cat "$PG_ROOT/data/PG_VERSION" 2>/dev/null) || v=
	if [ -n "$v" ] && [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then
		echo "/usr/lib/postgresql/$v/bin"
		return 0
	fi
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$d" ] && [ -x "$d/pg_ctl" ]; then
		echo "$d"
		return 0
	fi
	d=$(command -v pg_ctl) || return 1
	dirname "$(readlink -f "$d")"
}

# as_pg runs a command as the postgres OS user when we are root, since
# PostgreSQL refuses to run as root.
as_pg() {
	if is_root; then
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

# pg_dirs makes .data/postgres usable by the server's user and sets PGDATA,
# PG_SOCK and PG_LOG. When a parent folder is private to root (a clone in
# /root, say), the postgres user cannot reach .data/postgres, so the cluster
# lives in /var/lib/lightbox/<id>/postgres and .data/postgres links to it.
pg_dirs() {
	mkdir -p "$DATA"
	if is_root; then
		id postgres >/dev/null 2>&1 ||
			die "there is no 'postgres' OS user to run PostgreSQL as (PostgreSQL refuses root): apt-get install postgresql creates it"
		if [ ! -L "$PG_ROOT" ]; then
			mkdir -p "$PG_ROOT"
			chown postgres:postgres "$PG_ROOT"
			if ! as_pg test -w "$PG_ROOT" -a -x "$PG_ROOT"; then
				local alt
				alt=/var/lib/lightbox/$(printf %s "$ROOT" | sha256sum | cut -c1-12)/postgres
				rmdir "$PG_ROOT" 2>/dev/null ||
					die "the postgres user cannot reach $PG_ROOT, which is not empty: move it away"
				say "the postgres user cannot reach $PG_ROOT (a parent folder is private): keeping the cluster in $alt"
				mkdir -p "$alt"
				chown postgres:postgres "$alt"
				ln -s "$alt" "$PG_ROOT"
			fi
		fi
	else
		mkdir -p "$PG_ROOT"
	fi
	local real
	real=$(readlink -f "$PG_ROOT")
	PGDATA=$real/data
	PG_SOCK=$real/run
	PG_LOG=$real/postgres.log
	if is_root; then
		as_pg mkdir -p "$PG_SOCK"
	else
		mkdir -p "$PG_SOCK"
	fi
}

pg_running() {
	[ -f "$PGDATA/postmaster.pid" ] && as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

pg_answers() {
	"$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U lightbox -d postgres -t 2
}

pg_psql() {
	"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U lightbox "$@"
}

pg_up() {
	PG_BIN=$(pg_bindir) || {
		apt_install "PostgreSQL is not installed" postgresql
		PG_BIN=$(pg_bindir) || die "no PostgreSQL server programs under /usr/lib/postgresql/*/bin"
	}
	pg_dirs
	if pg_running; then
		if pg_answers; then
			say "reusing PostgreSQL at $(pg_url)"
			return 0
		fi
		die "our PostgreSQL (in $PGDATA) does not answer on port $PG_PORT; was LIGHTBOX_PG_PORT different when it started? Stop it with: make services-stop"
	fi
	if pg_answers; then
		die "a PostgreSQL that is not ours answers on port $PG_PORT: stop it, or set LIGHTBOX_PG_PORT or DATABASE_URL"
	fi
	wait_port_free "$PG_PORT" LIGHTBOX_PG_PORT
	if [ ! -s "$PGDATA/PG_VERSION" ]; then
		say "creating a PostgreSQL cluster in $PGDATA"
		# A local development cluster: trust on loopback only (it listens on
		# nothing else), and no fsync while initdb writes its files.
		as_pg "$PG_BIN/initdb" -D "$PGDATA" -U lightbox --auth=trust \
			--encoding=UTF8 --no-locale --no-sync >"$PG_LOG.initdb" 2>&1 ||
			{
				cat "$PG_LOG.initdb" >&2
				die "initdb failed"
			}
		# Sized for the test suite on two cores: many packages in parallel,
		# each with its own schema and connection pools.
		as_pg tee -a "$PGDATA/postgresql.conf" >/dev/null <<-EOF

			# Lightbox development cluster (scripts/lib.sh). Port, socket and
			# fsync are given on the command line at each start.
			listen_addresses = '127.0.0.1'
			max_connections = 300
			shared_buffers = 256MB
			max_locks_per_transaction = 256
			timezone = 'UTC'
			log_timezone = 'UTC'
		EOF
	fi
	local opts="-p $PG_PORT -c listen_addresses=127.0.0.1"
	# The socket path must fit in 107 bytes; without it we still have TCP.
	if [ ${#PG_SOCK} -lt 90 ]; then
		opts+=" -k '$PG_SOCK'"
	else
		opts+=" -k ''"
	fi
	if [ "${LIGHTBOX_PG_FSYNC:-on}" = off ]; then
		opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	fi
	if ! as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PG_LOG" -o "$opts" -w -t 60 start >/dev/null 9>&-; then
		tail -n 20 "$PG_LOG" >&2 || true
		die "PostgreSQL did not start: see $PG_LOG"
	fi
	STARTED+=(pg)
	if [ "$(pg_psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'lightbox'")" != 1 ]; then
		pg_psql -d postgres -c 'CREATE DATABASE lightbox' || die "could not create the lightbox database"
	fi
	local fsync=on
	[ "${LIGHTBOX_PG_FSYNC:-on}" = off ] && fsync=off
	say "started PostgreSQL at $(pg_url) (fsync $fsync), data in ${PGDATA#"$ROOT"/}"
}

pg_stop() {
	PG_BIN=$(pg_bindir) || {
		say "PostgreSQL: not installed, nothing to stop"
		return 0
	}
	[ -e "$PG_ROOT" ] || {
		say "PostgreSQL: ours is not running"
		return 0
	}
	local real
	real=$(readlink -f "$PG_ROOT")
	PGDATA=$real/data
	if ! pg_running; then
		say "PostgreSQL: ours is not running"
		return 0
	fi
	as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null
	say "stopped PostgreSQL ($PGDATA)"
}

# ---- S3 (Versity's gateway) ------------------------------------------------

s3_url() { echo "http://127.0.0.1:$S3_PORT"; }

s3_pid() {
	local pid
	pid=$(cat "$S3_DIR/versitygw.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = versitygw ] && echo "$pid"
}

# s3_answers: any HTTP answer (403 without credentials) means it is up.
s3_answers() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(s3_url)/" 2>/dev/null)" != 000 ]
}

# random_hex N prints N random bytes in hex, for secrets.
random_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# versitygw_bin builds the gateway once per tree; later runs reuse it.
versitygw_bin() {
	local bin=$DATA/bin/versitygw
	if [ ! -x "$bin" ]; then
		say "building versitygw $VERSITYGW_VERSION into ${bin#"$ROOT"/} (once; a few minutes)"
		mkdir -p "$DATA/bin"
		(cd "$DATA" && GOBIN=$DATA/bin GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION") >&2 ||
			die "could not build versitygw $VERSITYGW_VERSION"
	fi
	echo "$bin"
}

s3_up() {
	local bin pid
	bin=$(versitygw_bin)
	mkdir -p "$S3_DIR/data"
	if [ ! -s "$S3_DIR/credentials" ]; then
		(umask 077 && printf 'lightbox\n%s\n' "$(random_hex 24)" >"$S3_DIR/credentials")
	fi
	S3_KEY_ID=$(sed -n 1p "$S3_DIR/credentials")
	S3_SECRET=$(sed -n 2p "$S3_DIR/credentials")
	if pid=$(s3_pid); then
		if s3_answers; then
			say "reusing the S3 server at $(s3_url) (pid $pid)"
			return 0
		fi
		die "our S3 server (pid $pid) does not answer on port $S3_PORT; was LIGHTBOX_S3_PORT different when it started? Stop it with: make services-stop"
	fi
	if s3_answers; then
		die "a server that is not ours answers on port $S3_PORT: stop it, or set LIGHTBOX_S3_PORT"
	fi
	wait_port_free "$S3_PORT" LIGHTBOX_S3_PORT
	# Browsers PUT and GET straight to it from the server's origin.
	ROOT_ACCESS_KEY_ID=$S3_KEY_ID ROOT_SECRET_ACCESS_KEY=$S3_SECRET \
		setsid "$bin" --port "127.0.0.1:$S3_PORT" --quiet --cors-allow-origin '*' posix "$S3_DIR/data" \
		>>"$S3_DIR/versitygw.log" 2>&1 9>&- </dev/null &
	echo $! >"$S3_DIR/versitygw.pid"
	wait_answers s3_answers s3_pid 0 "$S3_DIR/versitygw.log" "the S3 server did not answer on port $S3_PORT"
	STARTED+=(s3)
	say "started the S3 server at $(s3_url), data in ${S3_DIR#"$ROOT"/}/data"
}

s3_stop() {
	local pid
	if ! pid=$(s3_pid); then
		say "S3: ours is not running"
		return 0
	fi
	term_wait "the S3 server" "$pid" 10
}

# ---- the face sidecar (faces/sidecar/) -----------------------------------------------

# node_major prints the major version of the Node.js on PATH, 0 for none.
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# node_ok says whether Node.js 20 or newer and npm are installed; otherwise
# it prints why not.
node_ok() {
	if ! command -v node >/dev/null; then
		echo "Node.js is not installed"
		return 1
	fi
	if [ "$(node_major)" -lt 20 ]; then
		echo "Node.js $(node --version 2>/dev/null) is too old"
		return 1
	fi
	if ! command -v npm >/dev/null; then
		echo "npm is not installed"
		return 1
	fi
}

# ml_deps installs the sidecar's npm packages, exactly as faces/sidecar/package-lock.json
# pins them, when node_modules is missing or was installed from another
# lockfile. OMIT_DEV=1 leaves out the test-only packages.
ml_deps() {
	local why stamp want
	why=$(node_ok) || die "the face sidecar needs Node.js 20 or newer with npm: $why. Install them (Debian 12 ships Node.js 18: take Node.js 20 from nodejs.org or NodeSource), or set LIGHTBOX_FACES=off"
	want="$(sha256sum "$ML_SRC/package-lock.json" | cut -d' ' -f1) node$(node_major)${OMIT_DEV:+ omit-dev}"
	stamp=$ML_SRC/node_modules/.lightbox-installed
	[ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || return 0
	mkdir -p "$ML_DIR"
	# One install at a time per tree.
	(
		flock -w 600 8 || die "another install holds $ML_DIR/.deps.lock"
		[ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || exit 0
		say "installing the face sidecar's packages (npm ci in faces/sidecar/)"
		# Packages run no install scripts: none needs one.
		(cd "$ML_SRC" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error ${OMIT_DEV:+--omit=dev}) >&2 ||
			die "npm ci in faces/sidecar/ failed: see above"
		echo "$want" >"$stamp"
	) 8>"$ML_DIR/.deps.lock"
}

ml_url() { echo "http://127.0.0.1:$ML_PORT"; }

# ml_pid prints the pid of the sidecar's supervisor we started, if it is alive.
ml_pid() {
	local pid
	pid=$(cat "$ML_DIR/ml.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'ml-supervise\.sh' && echo "$pid"
}

ml_answers() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(ml_url)/healthz" 2>/dev/null)" = 200 ]
}

# ml_takes_secret says whether the sidecar takes the secret in
# .data/ml/secret: an empty image sent with it is refused as empty, not as
# unauthorized. (curl reads the header from stdin, out of ps's sight.)
ml_takes_secret() {
	[ "$(printf 'header = "Authorization: Bearer %s"\n' "$(cat "$ML_DIR/secret")" |
		curl -s -o /dev/null -w '%{http_code}' --max-time 5 -K - -X POST -H 'Content-Type: image/jpeg' --data-binary '' "$(ml_url)/v1/faces" 2>/dev/null)" = 400 ]
}

# ml_export exports FACES_URL and FACES_SECRET_FILE for the workers.
ml_export() {
	unset FACES_SECRET
	export FACES_URL FACES_SECRET_FILE
	FACES_URL=$(ml_url)/v1/faces
	FACES_SECRET_FILE=$ML_DIR/secret
}

# ml_wanted says whether to run the bundled face sidecar: LIGHTBOX_FACES=on
# always, off never, auto (the default) when FACES_URL names no other
# provider and Node.js 20 is installed (otherwise it says why faces are off).
ml_wanted() {
	local why
	case ${LIGHTBOX_FACES:-auto} in
	on) return 0 ;;
	off) return 1 ;;
	auto) ;;
	*) die "LIGHTBOX_FACES is auto, on or off, not ${LIGHTBOX_FACES}" ;;
	esac
	[ -z "${FACES_URL:-}" ] || return 1
	if ! why=$(node_ok); then
		say "faces are off: $why (the face sidecar needs Node.js 20 or newer with npm)"
		return 1
	fi
}

# ml_up installs the sidecar's packages if need be, makes its secret once,
# starts it on loopback under a supervisor that starts it again if it
# exits, waits until its models are loaded, and exports FACES_URL and
# FACES_SECRET_FILE.
ml_up() {
	local pid i
	ml_deps
	mkdir -p "$ML_DIR"
	[ -s "$ML_DIR/secret" ] || (umask 077 && random_hex 32 >"$ML_DIR/secret")
	if pid=$(ml_pid); then
		if ml_answers; then
			ml_takes_secret ||
				die "our face sidecar (pid $pid) refuses the secret in ${ML_DIR#"$ROOT"/}/secret: stop it with scripts/ml.sh stop, then start again"
			say "reusing the face sidecar at $(ml_url) (pid $pid)"
			ml_export
			return 0
		fi
		die "our face sidecar (pid $pid) does not answer on port $ML_PORT; was LIGHTBOX_ML_PORT different when it started? Stop it with: scripts/ml.sh stop"
	fi
	if ml_answers; then
		die "a server that is not ours answers on port $ML_PORT: stop it, or set LIGHTBOX_ML_PORT"
	fi
	wait_port_free "$ML_PORT" LIGHTBOX_ML_PORT
	# The supervisor runs in a process group of its own (setsid), so that
	# ml_stop ends it and the sidecar together.
	ML_HOST=127.0.0.1 ML_PORT=$ML_PORT ML_AUTH=secret ML_SECRET= ML_SECRET_FILE=$ML_DIR/secret \
		setsid "$ROOT/scripts/ml-supervise.sh" >>"$ML_DIR/ml.log" 2>&1 9>&- 8>&- </dev/null &
	echo $! >"$ML_DIR/ml.pid"
	# Loading the models takes seconds, longer on a busy machine.
	for i in $(seq 1200); do
		ml_answers && break
		if [ "$i" -gt 10 ] && ! ml_pid >/dev/null; then
			tail -n 20 "$ML_DIR/ml.log" >&2 || true
			die "the face sidecar stopped while starting: see $ML_DIR/ml.log"
		fi
		sleep 0.1
	done
	if ! ml_answers; then
		tail -n 20 "$ML_DIR/ml.log" >&2 || true
		die "the face sidecar did not answer on port $ML_PORT within 2 minutes: see $ML_DIR/ml.log"
	fi
	STARTED+=(ml)
	ml_export
	say "started the face sidecar at $(ml_url), log in ${ML_DIR#"$ROOT"/}/ml.log"
}

# ml_stop stops our face sidecar and its supervisor.
ml_stop() {
	local pid i
	if ! pid=$(ml_pid); then
		say "face sidecar: ours is not running"
		return 0
	fi
	# The whole group: the supervisor, and the sidecar, which finishes the
	# requests in progress (up to 10 s).
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
	for i in $(seq 150); do
		kill -0 -- "-$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 -- "-$pid" 2>/dev/null; then
		say "the face sidecar (group $pid) did not stop within 15 s"
		return 1
	fi
	rm -f "$ML_DIR/ml.pid"
	say "stopped the face sidecar (pid $pid)"
}

# ---- all --------------------------------------------------------------------

# services_up starts (or reuses) our Redis and PostgreSQL for whichever of
# REDIS_URL and DATABASE_URL is unset, exports both, and writes them to
# .data/env.
services_up() {
	mkdir -p "$DATA"
	# One start at a time per tree, so two `make` runs do not race.
	# (The servers we start get fd 9 closed, so they cannot hold the lock.)
	exec 9>"$DATA/.services.lock"
	flock -w 120 9 || die "another start holds $DATA/.services.lock"
	if [ -z "${REDIS_URL:-}" ]; then
		redis_up
		REDIS_URL=$(redis_url)
	else
		say "using REDIS_URL from the environment"
	fi
	if [ -z "${DATABASE_URL:-}" ]; then
		pg_up
		DATABASE_URL=$(pg_url)
	else
		say "using DATABASE_URL from the environment"
	fi
	export REDIS_URL DATABASE_URL
	printf "export REDIS_URL='%s'\nexport DATABASE_URL='%s'\n" "$REDIS_URL" "$DATABASE_URL" >"$DATA/env"
	if [ -n "$S3_WANTED" ] && [ -z "${LIGHTBOX_TEST_S3_ENDPOINT:-}" ]; then
		s3_up
		LIGHTBOX_TEST_S3_ENDPOINT=$(s3_url)
		LIGHTBOX_TEST_S3_ACCESS_KEY_ID=$S3_KEY_ID
		LIGHTBOX_TEST_S3_SECRET_ACCESS_KEY=$S3_SECRET
	fi
	if [ -n "${LIGHTBOX_TEST_S3_ENDPOINT:-}" ]; then
		export LIGHTBOX_TEST_S3_ENDPOINT LIGHTBOX_TEST_S3_ACCESS_KEY_ID LIGHTBOX_TEST_S3_SECRET_ACCESS_KEY
		printf "export LIGHTBOX_TEST_S3_ENDPOINT='%s'\nexport LIGHTBOX_TEST_S3_ACCESS_KEY_ID='%s'\nexport LIGHTBOX_TEST_S3_SECRET_ACCESS_KEY='%s'\n" \
			"$LIGHTBOX_TEST_S3_ENDPOINT" "$LIGHTBOX_TEST_S3_ACCESS_KEY_ID" "$LIGHTBOX_TEST_S3_SECRET_ACCESS_KEY" >>"$DATA/env"
	fi
	flock -u 9
}

# services_down stops what services_up started in this process, and only that.
services_down() {
	local s
	for s in "${STARTED[@]}"; do
		case $s in
		redis) redis_stop || true ;;
		pg) pg_stop || true ;;
		s3) s3_stop || true ;;
		ml) ml_stop || true ;;
		esac
	done
	STARTED=()
}
