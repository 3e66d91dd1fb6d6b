# Sourced by the PostgreSQL benches: start_postgres WORK [SETTING ...] starts a PostgreSQL 15 of its own in WORK/pgdata
# on a free loopback port (as the `postgres` user when run as root), with fsync on and max_wal_size=4GB plus the
# given `-c` settings. When the shell exits, the processes in BENCH_PIDS are killed, the server stopped and WORK
# removed. Sets PG_PORT; psql_ runs psql against it.
PG_BIN=/usr/lib/postgresql/15/bin
BENCH_PIDS=()
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
start_postgres() {
  local work=$1 && shift
  local options="-p PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work -c max_wal_size=4GB"
  for setting in "$@"; do options+=" -c $setting"; done
  PG_WORK=$work
  trap stop_postgres EXIT
  [ "$(id -u)" = 0 ] && chown postgres: "$work"
  PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_pg "$PG_BIN/initdb" -D "$work/pgdata" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
  as_pg "$PG_BIN/pg_ctl" -D "$work/pgdata" -l "$work/server.log" -w -o "${options/PORT/$PG_PORT}" start >/dev/null
}
stop_postgres() {
  for pid in "${BENCH_PIDS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  if [ -d "$PG_WORK/pgdata" ]; then as_pg "$PG_BIN/pg_ctl" -D "$PG_WORK/pgdata" -m fast -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$PG_WORK"
}
psql_() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@"; }
