#!/usr/bin/env bash
# Runs Lightbox for development: Redis and PostgreSQL (started here unless
# REDIS_URL / DATABASE_URL name others), the face sidecar (LIGHTBOX_FACES,
# see ml_wanted), migrations, a development admin user, the attestation
# signing key, then the server and the worker. Ctrl-C stops
# the server, the worker and the services this run started, nothing else.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

export DATA_DIR=${DATA_DIR:-.data}
export HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8080}
export PUBLIC_URL=${PUBLIC_URL:-http://$HTTP_ADDR}
PUBLIC_URL=${PUBLIC_URL%/}
export LOG_FORMAT=${LOG_FORMAT:-text}
export CHAIN_KEY_FILE=${CHAIN_KEY_FILE:-$DATA_DIR/chain-ed25519.key}
DEV_EMAIL=${LIGHTBOX_DEV_EMAIL:-dev@lightbox.localhost}
# Keys are stored hashed, so the development key is kept here to be shown at
# every run.
KEY_FILE=$DATA/dev-api-key

PIDS=()
stop_all() {
	trap - EXIT INT TERM HUP
	if [ ${#PIDS[@]} -gt 0 ]; then
		say "stopping the server and the worker"
		kill -TERM "${PIDS[@]}" 2>/dev/null || true
		local pid
		for pid in "${PIDS[@]}"; do
			wait "$pid" 2>/dev/null || say "pid $pid exited with status $?"
		done
	fi
	services_down
}
# Ctrl-C and SIGTERM (a supervisor, a closing terminal through make) stop
# it alike: what runs in the foreground first, then everything this run
# started.
trap stop_all EXIT
trap 'stop_child INT; exit 0' INT
trap 'stop_child TERM; exit 0' TERM
trap 'stop_child HUP; exit 0' HUP

ensure_build_deps
[ "${BLOB_BACKEND:-disk}" != s3 ] || S3_WANTED=1
services_up
# Faces are opt-in per project; the sidecar runs so that a project that
# opts in finds them, and exports FACES_URL and FACES_SECRET_FILE for the
# worker.
if ml_wanted; then ml_up; fi
if [ "${BLOB_BACKEND:-disk}" = s3 ]; then
	# The local S3 server unless S3_ENDPOINT names another; processes that
	# share no DATA_DIR must be given the upload secret.
	if [ -z "${S3_ENDPOINT:-}" ]; then
		export S3_ENDPOINT=$LIGHTBOX_TEST_S3_ENDPOINT S3_ACCESS_KEY_ID=$LIGHTBOX_TEST_S3_ACCESS_KEY_ID \
			S3_SECRET_ACCESS_KEY=$LIGHTBOX_TEST_S3_SECRET_ACCESS_KEY S3_BUCKET=${S3_BUCKET:-lightbox} S3_FORCE_PATH_STYLE=true
	fi
	if [ -z "${UPLOAD_SECRET:-}${UPLOAD_SECRET_FILE:-}" ]; then
		export UPLOAD_SECRET_FILE=$DATA/upload-secret-s3
		[ -s "$UPLOAD_SECRET_FILE" ] || (umask 077 && random_hex 32 >"$UPLOAD_SECRET_FILE")
	fi
fi

say "building"
run_child go build -o bin/ ./cmd/server ./cmd/worker ./cmd/lightbox
mkdir -p "$DATA_DIR"
bin/lightbox migrate
if [ ! -e "$CHAIN_KEY_FILE" ]; then
	pub=$(bin/lightbox keygen "$CHAIN_KEY_FILE" 2>/dev/null)
	say "wrote the chain signing key to $CHAIN_KEY_FILE (public key $pub)"
fi

# status PATH [KEY] prints the HTTP status of GET PUBLIC_URL/PATH.
status() {
	local auth=()
	[ -z "${2:-}" ] || auth=(-H "Authorization: Bearer $2")
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${auth[@]}" "$PUBLIC_URL$1" || true
}

# new_dev_key creates the development user with a key, or only a new key when
# the user exists (its key file was lost, or this is another database).
new_dev_key() {
	local key err
	if ! key=$(bin/lightbox users create --email "$DEV_EMAIL" --admin 2>"$DATA/.dev-user.err"); then
		err=$(cat "$DATA/.dev-user.err")
		key=$(bin/lightbox keys create --email "$DEV_EMAIL" --name development) ||
			die "could not create the development user ($err) nor a key for it"
	fi
	rm -f "$DATA/.dev-user.err"
	(umask 077 && printf '%s\n' "$key" >"$KEY_FILE.tmp")
	mv "$KEY_FILE.tmp" "$KEY_FILE"
	say "created a development API key for $DEV_EMAIL in ${KEY_FILE#"$ROOT"/}"
}
[ -s "$KEY_FILE" ] || new_dev_key

start() {
	local name=$1
	shift
	# Each line of output is prefixed with the process's name. The prefixer
	# ignores Ctrl-C so that it outlives the process and passes on its last
	# words while it shuts down.
	"$@" > >(
		trap '' INT TERM
		exec sed -u "s/^/[$name] /"
	) 2>&1 &
	PIDS+=($!)
}
start server bin/server
start worker bin/worker

ready=
if command -v curl >/dev/null; then
	for _ in $(seq 120); do
		if [ "$(status /readyz)" = 200 ]; then
			ready=1
			break
		fi
		# Stop waiting when a process has died.
		for pid in "${PIDS[@]}"; do
			kill -0 "$pid" 2>/dev/null || die "a process exited during start-up: see its output above"
		done
		sleep 0.5
	done
	[ -n "$ready" ] || say "the server did not answer $PUBLIC_URL/readyz with 200 within 60 s"
	# A key from another database (the data was reset, or DATABASE_URL
	# changed) is refused: make one that works here.
	if [ "$(status /v1/projects "$(cat "$KEY_FILE")")" = 401 ]; then
		new_dev_key
	fi
fi
key=$(cat "$KEY_FILE")

cat >&2 <<EOF

  Lightbox is running${ready:+ and ready}.
    App               $PUBLIC_URL/
    API               $PUBLIC_URL/v1
    Queues (Asynqmon) $PUBLIC_URL/admin/queues
    Admin page        $PUBLIC_URL/admin
    Readiness         $PUBLIC_URL/readyz
    Redis             $REDIS_URL
    PostgreSQL        $DATABASE_URL
    Faces             ${FACES_URL:-off}

  Development API key ($DEV_EMAIL, admin; kept in ${KEY_FILE#"$ROOT"/}):
    $key

  Try:
    curl -H 'Authorization: Bearer $key' $PUBLIC_URL/v1/projects

  Ctrl-C stops it all.

EOF

# Run until Ctrl-C (a normal stop: exit 0), or until the server or the
# worker exits on its own.
rc=0
wait -n "${PIDS[@]}" || rc=$?
say "a process exited (status $rc): stopping the rest"
exit $rc
