#!/usr/bin/env bash
# Load benchmark: the real `socialsearch serve` (release) against an instant local upstream, with
# thousands of keys over hundreds of accounts so that the per-key limits do not bind. Prints paid calls
# per second, the latency the service adds over calling the upstream directly (p50, p99, at a fixed
# rate), and the throughput of a bare nginx proxy_pass to the same upstream in the same run.
# No figure is asserted. Usage: bench/run.sh [sqlite|postgres|both] (default both). Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
WHICH=${1:-both}
SECONDS_PER_RUN=${BENCH_SECONDS:-10}
RATE=${BENCH_RATE:-1000}
CONCURRENCY=${BENCH_CONCURRENCY:-64}
PG_ADMIN=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}

if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

cargo build --release -p server --bin socialsearch --example loadgen
BIN=$CARGO_TARGET_DIR/release/socialsearch
LOADGEN=$CARGO_TARGET_DIR/release/examples/loadgen
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }

UP_PORT=$(free_port)
"$LOADGEN" upstream --listen 127.0.0.1:$UP_PORT 2>/dev/null & PIDS+=($!)
wait_port $UP_PORT
NG_PORT=$(free_port)
mkdir -p "$WORK/nginx"
cat > "$WORK/nginx/nginx.conf" <<NGX
worker_processes auto;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  upstream up { server 127.0.0.1:$UP_PORT; keepalive 128; }
  server {
    listen 127.0.0.1:$NG_PORT;
    location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
NGX
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' & PIDS+=($!)
wait_port $NG_PORT

UPSTREAM_PATH="/api/v1/search?query=x&tags=story"
run() { "$LOADGEN" run "$@" --seconds "$SECONDS_PER_RUN"; }

echo "== baseline (same run): the upstream directly, and nginx proxy_pass"
DIRECT_RATE=$(run --url "http://127.0.0.1:$UP_PORT$UPSTREAM_PATH" --rate "$RATE" --label "upstream direct @${RATE}/s")
echo "$DIRECT_RATE"
NGINX_MAX=$(run --url "http://127.0.0.1:$NG_PORT$UPSTREAM_PATH" --concurrency "$CONCURRENCY" --label "nginx proxy_pass max")
echo "$NGINX_MAX"

field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

bench_db() {
  local name=$1 url=$2
  echo "== socialsearch on $name"
  export DATABASE_URL=$url
  SOCIALSEARCH_CONFIG="$WORK/config.toml" "$LOADGEN" seed --accounts 300 --keys-per-account 10 --credits 100000000 --out "$WORK/keys.txt"
  local port; port=$(free_port)
  # The local upstream is ours: lift the courtesy limit the service keeps for the real one (10,000/hour).
  SOCIALSEARCH_SOURCE_TECHFORUM_ALGOLIA_BASE_URL="http://127.0.0.1:$UP_PORT/api/v1" SOCIALSEARCH_SOURCE_TECHFORUM_ALGOLIA_RATE_PER_SEC=0 RUST_LOG=warn \
    SOCIALSEARCH_CONFIG="$WORK/config.toml" "$BIN" serve --listen 127.0.0.1:$port 2>"$WORK/serve-$name.log" & local pid=$!
  PIDS+=($pid)
  wait_port $port
  local path="/v1/techforum/search?query=x"
  local max rate
  max=$(run --url "http://127.0.0.1:$port$path" --keys "$WORK/keys.txt" --concurrency "$CONCURRENCY" --label "socialsearch $name max")
  echo "$max"
  rate=$(run --url "http://127.0.0.1:$port$path" --keys "$WORK/keys.txt" --rate "$RATE" --label "socialsearch $name @${RATE}/s")
  echo "$rate"
  kill -TERM $pid; wait $pid 2>/dev/null || true
  python3 - "$max" "$rate" "$DIRECT_RATE" "$NGINX_MAX" "$name" <<'PY'
import json, sys
mx, rt, direct, ngx = (json.loads(a) for a in sys.argv[1:5])
print(f"RESULT {sys.argv[5]}: {mx['per_second']:.0f} paid calls/s (nginx {ngx['per_second']:.0f}/s, ratio {mx['per_second']/max(ngx['per_second'],1):.2f}); "
      f"added latency at {rt['ok']/max(1,1)/1:.0f} calls: p50 {rt['p50_ms']-direct['p50_ms']:+.3f} ms, p99 {rt['p99_ms']-direct['p99_ms']:+.3f} ms "
      f"(service p50 {rt['p50_ms']:.3f} / p99 {rt['p99_ms']:.3f} ms; upstream direct p50 {direct['p50_ms']:.3f} / p99 {direct['p99_ms']:.3f} ms)")
PY
}

cat > "$WORK/config.toml" <<CFG
[mail]
outbox_path = "$WORK/outbox.log"
CFG

if [ "$WHICH" = sqlite ] || [ "$WHICH" = both ]; then
  bench_db sqlite "sqlite://$WORK/bench.db?mode=rwc"
fi
if [ "$WHICH" = postgres ] || [ "$WHICH" = both ]; then
  DB="bench_$(date +%s)"
  psql "$PG_ADMIN" -qc "CREATE DATABASE $DB" >/dev/null
  bench_db postgres "${PG_ADMIN%/*}/$DB"
  psql "$PG_ADMIN" -qc "DROP DATABASE $DB WITH (FORCE)" >/dev/null
fi
