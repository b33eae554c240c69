#!/bin/bash
# A three-node MariaDB Galera cluster on loopback, for the functional tests
# of the journal's compare-and-swap through two nodes (tox -e galera; see
# doc/source/admin/galera.rst). Adapted from the spike's script.
#
# Usage (as root, Debian 12 packages mariadb-server + galera-4 + rsync,
# which tools/ci/setup-services.sh installs; haproxy only for
# "haproxy-up"):
#   galera-cluster.sh up          # init + bootstrap node 1, join 2 and 3
#   galera-cluster.sh status      # wsrep size/state of each node
#   galera-cluster.sh sql N "SQL" # run SQL as root on node N (1..3)
#   galera-cluster.sh kill N      # kill -9 node N (failover experiments)
#   galera-cluster.sh start N     # (re)start node N, joining the others
#                                 # (NOWAIT=1: don't wait for Synced, e.g.
#                                 # while the others are non-Primary)
#   galera-cluster.sh haproxy-up  # HAProxy: 1 active writer, 2 backups
#   galera-cluster.sh down        # stop HAProxy and all nodes, by PID
#   galera-cluster.sh clean       # down + remove the base directory
#   galera-cluster.sh urls        # the node URLs, comma-separated, as
#                                 # NOVA_CELL0_REBUILD_GALERA wants them
#   galera-cluster.sh haproxy-url # host:port of HAProxy's frontend
#
# Environment: GALERA_BASE (default /tmp/galera/cluster) holds a data
# directory, socket, config, log and pid file per node; nothing outside it
# is touched and no other MariaDB is stopped (only PIDs from our pid files).
# Ports: SQL 13306/13307/13308, group communication 14567/14577/14587,
# IST 14568/14578/14588, rsync SST 14569/14579/14589, HAProxy 13300
# (stats on 13399), each node's clustercheck 13391/13392/13393.
# GALERA_PORT_OFFSET (default 0) is added to every one of them, for a
# second cluster beside the first (the Galera cloud job's, with its own
# GALERA_BASE, while tox -e galera uses the first).
# HAProxy checks each node with a clustercheck (galera-clustercheck.py:
# HTTP 200 only when the node is Synced and ready), as operators run it;
# GALERA_CHECK=mysql-check uses HAProxy's own check instead, which keeps
# a node that lost its quorum UP.
# The SQL user openstack_citest/openstack_citest (all privileges) and database openstack_citest are created, as oslo.db's
# opportunistic tests expect them. The nodes run as the mysql user, so
# every directory above GALERA_BASE must be searchable by it (mode 755).
# Takes ~12 s to come up on two cores.
set -euo pipefail

BASE=${GALERA_BASE:-/tmp/nova-cell0-rebuild-galera/cluster}
case $BASE in /*/*) ;; *) echo "GALERA_BASE must be a directory two levels deep or more" >&2; exit 2 ;; esac
PROVIDER=${GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
NODES=(1 2 3)
OFFSET=${GALERA_PORT_OFFSET:-0}
case $OFFSET in *[!0-9]*|'') echo "GALERA_PORT_OFFSET must be a number" >&2; exit 2 ;; esac
sql_port() { echo $((13305 + OFFSET + $1)); }
gcomm_port() { echo $((14557 + OFFSET + 10 * $1)); }
check_port() { echo $((13390 + OFFSET + $1)); }
HAPROXY_PORT=$((13300 + OFFSET))
STATS_PORT=$((13399 + OFFSET))
ADDRS="127.0.0.1:$(gcomm_port 1),127.0.0.1:$(gcomm_port 2),127.0.0.1:$(gcomm_port 3)"

write_cnf() {
    local n=$1 d=$BASE/n$1 g
    g=$(gcomm_port "$n")
    mkdir -p "$d/data"
    # As the mysql user, as Debian runs it: the joiner's rsync SST daemon,
    # started as root, would drop to "nobody" and fail (rsync code 23).
    chown mysql:mysql "$d" "$d/data"
    chmod 755 "$BASE"
    cat > "$d/my.cnf" <<EOF
[mysqld]
user=mysql
datadir=$d/data
socket=$d/mysqld.sock
pid-file=$d/mysqld.pid
log-error=$d/error.log
port=$(sql_port "$n")
bind-address=127.0.0.1
skip-name-resolve
character-set-server=utf8mb4
max-connections=500
innodb_buffer_pool_size=64M
innodb_log_file_size=48M
innodb_flush_log_at_trx_commit=2
default_storage_engine=InnoDB
binlog_format=ROW
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=$PROVIDER
wsrep_cluster_name=cell0_rebuild_galera_$OFFSET
wsrep_cluster_address=gcomm://$ADDRS
wsrep_node_name=n$n
wsrep_node_address=127.0.0.1:$g
wsrep_node_incoming_address=127.0.0.1:$(sql_port "$n")
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:$g;ist.recv_addr=127.0.0.1:$((g + 1));gcache.size=64M"
wsrep_sst_receive_address=127.0.0.1:$((g + 2))
wsrep_sst_method=rsync
wsrep_slave_threads=2
EOF
}

# Our own pid file (mariadbd writes mysqld.pid only once it has a state,
# i.e. not while it waits in a non-Primary component).
pid_of() { cat "$BASE/n$1/node.pid" 2>/dev/null || true; }
alive() { local p; p=$(pid_of "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
mysql_n() { mariadb --no-defaults -uroot -S "$BASE/n$1/mysqld.sock" "${@:2}"; }

wait_synced() {  # node, timeout seconds
    local i
    for ((i = 0; i < $2 * 2; i++)); do
        if [ "$(mysql_n "$1" -Nse "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='WSREP_LOCAL_STATE_COMMENT'" 2>/dev/null)" = Synced ]; then
            return 0
        fi
        alive "$1" || { echo "node $1 died; see $BASE/n$1/error.log" >&2; tail -20 "$BASE/n$1/error.log" >&2; return 1; }
        sleep 0.5
    done
    echo "node $1 not Synced after $2 s" >&2; return 1
}

start_node() {  # node [extra mariadbd args]
    local n=$1
    shift
    alive "$n" && { echo "node $n already running"; return 0; }
    write_cnf "$n"
    setsid /usr/sbin/mariadbd --defaults-file="$BASE/n$n/my.cnf" "$@" \
        </dev/null >>"$BASE/n$n/stdout.log" 2>&1 &
    echo $! > "$BASE/n$n/node.pid"
    [ "${NOWAIT:-}" ] && { echo "node $n started (pid $!)"; return 0; }
    wait_synced "$n" 120
    echo "node $n Synced (pid $(pid_of "$n"), port $(sql_port "$n"))"
}

up() {
    local t0=$SECONDS
    write_cnf 1
    if [ ! -d "$BASE/n1/data/mysql" ]; then
        mariadb-install-db --no-defaults --user=mysql --datadir="$BASE/n1/data" \
            --auth-root-authentication-method=socket --skip-test-db \
            >"$BASE/n1/install.log" 2>&1
    fi
    # Bootstrap: a new Primary Component of one node.  A node that ran
    # before refuses to bootstrap unless it was the last one to leave
    # (safe_to_bootstrap); we force it, as this is a throwaway cluster.
    [ -f "$BASE/n1/data/grastate.dat" ] && \
        sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$BASE/n1/data/grastate.dat"
    start_node 1 --wsrep-new-cluster
    mysql_n 1 <<'SQL'
CREATE USER IF NOT EXISTS 'openstack_citest'@'%' IDENTIFIED BY 'openstack_citest';
CREATE USER IF NOT EXISTS 'openstack_citest'@'localhost' IDENTIFIED BY 'openstack_citest';
GRANT ALL PRIVILEGES ON *.* TO 'openstack_citest'@'%' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'openstack_citest'@'localhost' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS openstack_citest CHARACTER SET utf8mb4;
SQL
    start_node 2   # joins through SST (rsync) from node 1
    start_node 3
    status
    echo "cluster up in $((SECONDS - t0)) s"
}

status() {
    local n
    for n in "${NODES[@]}"; do
        if alive "$n"; then
            echo "n$n pid $(pid_of "$n"): $(mysql_n "$n" -Nse "SELECT GROUP_CONCAT(CONCAT(VARIABLE_NAME,'=',VARIABLE_VALUE) SEPARATOR ' ') FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('WSREP_CLUSTER_SIZE','WSREP_CLUSTER_STATUS','WSREP_LOCAL_STATE_COMMENT','WSREP_READY')" 2>&1)"
        else
            echo "n$n down"
        fi
    done
}

haproxy_check() {  # the "listen galera" lines that check the nodes
    if [ "${GALERA_CHECK:-clustercheck}" = mysql-check ]; then
        echo "    option mysql-check user haproxy"
    else
        # The clustercheck answers 200 only when the node is Synced (state
        # 4) and ready: a node that lost its quorum, or a donor, is DOWN.
        echo "    option httpchk GET /"
        echo "    http-check expect status 200"
    fi
    echo "    default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions"
}

server_check() {  # node: its "check" words
    if [ "${GALERA_CHECK:-clustercheck}" = mysql-check ]; then
        echo "check"
    else
        echo "check port $(check_port "$1")"
    fi
}

clustercheck_up() {
    local n i args=()
    for n in "${NODES[@]}"; do
        args+=("$(check_port "$n")=$BASE/n$n/mysqld.sock")
    done
    setsid python3 "$(dirname "$(readlink -f "$0")")/galera-clustercheck.py" "${args[@]}" \
        </dev/null >>"$BASE/haproxy/clustercheck.log" 2>&1 &
    echo $! > "$BASE/haproxy/clustercheck.pid"
    for n in "${NODES[@]}"; do
        for ((i = 0; i < 40; i++)); do
            (exec 3<>"/dev/tcp/127.0.0.1/$(check_port "$n")") 2>/dev/null && break
            sleep 0.25
        done
    done
    echo "clustercheck pid $(cat "$BASE/haproxy/clustercheck.pid") on ports $(check_port 1)-$(check_port 3)"
}

haproxy_up() {
    mkdir -p "$BASE/haproxy"
    cat > "$BASE/haproxy/haproxy.cfg" <<EOF
global
    maxconn 2000
defaults
    mode tcp
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout check 2s
listen galera
    bind 127.0.0.1:$HAPROXY_PORT
$(haproxy_check)
    # When n1 comes back, cut the sessions left on the backups: otherwise
    # pooled connections keep writing through n2 while new ones write
    # through n1 (two writers: certification conflicts).
    server n1 127.0.0.1:$(sql_port 1) $(server_check 1) on-marked-up shutdown-backup-sessions
    server n2 127.0.0.1:$(sql_port 2) $(server_check 2) backup
    server n3 127.0.0.1:$(sql_port 3) $(server_check 3) backup
listen stats
    bind 127.0.0.1:$STATS_PORT
    mode http
    stats enable
    stats uri /
EOF
    # mysql-check logs in as this user (no password, no privileges).
    mysql_n 1 -e "CREATE USER IF NOT EXISTS 'haproxy'@'127.0.0.1'"
    [ "${GALERA_CHECK:-clustercheck}" = mysql-check ] || clustercheck_up
    haproxy -f "$BASE/haproxy/haproxy.cfg" -D -p "$BASE/haproxy/haproxy.pid"
    echo "haproxy pid $(cat "$BASE/haproxy/haproxy.pid") on 127.0.0.1:$HAPROXY_PORT"
}

haproxy_down() {
    local p f
    for f in haproxy clustercheck; do
        p=$(cat "$BASE/haproxy/$f.pid" 2>/dev/null || true)
        if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill "$p"; echo "$f $p stopped"; fi
    done
}

stop_node() {
    local p i
    p=$(pid_of "$1")
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
        kill "$p"
        for ((i = 0; i < 60; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$p" 2>/dev/null && kill -9 "$p"
        echo "node $1 (pid $p) stopped"
    fi
}

down() {
    haproxy_down
    local n
    for n in 3 2 1; do stop_node "$n"; done
}

urls() {
    local n out=()
    for n in "${NODES[@]}"; do
        out+=("mysql+pymysql://openstack_citest:openstack_citest@127.0.0.1:$(sql_port "$n")/openstack_citest?charset=utf8mb4")
    done
    (IFS=,; echo "${out[*]}")
}

case ${1:-} in
    up) up ;;
    status) status ;;
    sql) mysql_n "$2" -e "$3" ;;
    kill) p=$(pid_of "$2"); kill -9 "$p"; echo "killed node $2 (pid $p)" ;;
    start) start_node "$2" ;;
    haproxy-up) haproxy_up ;;
    haproxy-down) haproxy_down ;;
    down) down ;;
    clean) down; rm -rf "$BASE" ;;
    urls) urls ;;
    haproxy-url) echo "127.0.0.1:$HAPROXY_PORT" ;;
    *) sed -n '2,42p' "$0"; exit 2 ;;
esac
