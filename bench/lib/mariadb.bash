# Sourced by the MySQL benches: start_mariadb WORK starts a MariaDB of its own in WORK/data on a free loopback port
# (as the `mysql` user when run as root) with the binlog as CDC needs it (ROW, full images and metadata) and the
# server's durable defaults otherwise (innodb_flush_log_at_trx_commit=1, sync_binlog=0). A user skippr/bench reaches it
# over TCP. When the shell exits the server is killed and WORK removed. Sets MY_PORT; my_ runs the client against it.
start_mariadb() {
  local work=$1
  MY_WORK=$work
  trap stop_mariadb EXIT
  [ "$(id -u)" = 0 ] && chown mysql: "$work"
  local as=()
  [ "$(id -u)" = 0 ] && as=(runuser -u mysql --)
  MY_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${as[@]}" mariadb-install-db --no-defaults --datadir="$work/data" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve >/dev/null 2>&1
  "${as[@]}" /usr/sbin/mariadbd --no-defaults --datadir="$work/data" --port="$MY_PORT" --bind-address=127.0.0.1 \
    --socket="$work/sock" --pid-file="$work/pid" --log-error="$work/error.log" --log-bin="$work/data/binlog" \
    --server-id=1 --binlog-format=ROW --binlog-row-image=FULL --binlog-row-metadata=FULL \
    --character-set-server=utf8mb4 --skip-name-resolve --innodb-buffer-pool-size=512M >/dev/null 2>&1 &
  for _ in $(seq 1 100); do
    mariadb-admin --no-defaults -uroot --socket="$work/sock" ping >/dev/null 2>&1 && break
    sleep 0.2
  done
  mariadb --no-defaults -uroot --socket="$work/sock" -e \
    "CREATE USER skippr@'%' IDENTIFIED BY 'bench'; GRANT ALL PRIVILEGES ON *.* TO skippr@'%'"
}
stop_mariadb() {
  [ -f "$MY_WORK/pid" ] && kill -9 "$(cat "$MY_WORK/pid")" 2>/dev/null || true
  sleep 0.5
  rm -rf "$MY_WORK"
}
my_() { mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -uskippr -pbench "$@"; }
