#!/bin/bash
# Install and start what the CI job's tests need, on a fresh Debian machine
# as root, without systemd: MariaDB and PostgreSQL with oslo.db's
# openstack_citest user and database (as oslo.db's tools/test-setup.sh
# makes them), the RabbitMQ package (tox -e cloud and the relay's
# functional test start their own nodes from it), Galera and rsync
# (tools/ci/galera-cluster.sh starts a three-node cluster from them),
# haproxy (tox -e cloud-galera puts it in front of its cluster), and
# redis-server (tox -e cloud starts one for stock Aardvark all_in_one's job
# board; patch applies master's compatibility diff). Also
# tox with tox-uv, and a full git history for reno.
set -euo pipefail

DB_USER=openstack_citest
DB_PW=openstack_citest

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    mariadb-server mariadb-client galera-4 rsync haproxy postgresql \
    rabbitmq-server redis-server patch >/dev/null

# policy-rc.d blocks autostart, so start them by hand.
service mariadb start
service postgresql start

# MariaDB: root logs in over the unix socket, no password.
mysql -u root <<SQL
DELETE FROM mysql.user WHERE User='';
CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PW';
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PW';
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'%' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'localhost' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
mysql -u $DB_USER -p$DB_PW -h 127.0.0.1 -e "
  DROP DATABASE IF EXISTS openstack_citest;
  CREATE DATABASE openstack_citest CHARACTER SET utf8mb4;"

# PostgreSQL: no sudo, so runuser; cd / so the postgres user can read the
# working directory.
(cd / && runuser -u postgres -- psql -q -v ON_ERROR_STOP=1 <<SQL
DO \$\$BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    ALTER ROLE $DB_USER WITH SUPERUSER LOGIN PASSWORD '$DB_PW';
  ELSE
    CREATE ROLE $DB_USER WITH SUPERUSER LOGIN PASSWORD '$DB_PW';
  END IF;
END\$\$;
SQL
)
PGPASSWORD=$DB_PW psql -q -h 127.0.0.1 -U $DB_USER -d template1 \
    -c "DROP DATABASE IF EXISTS openstack_citest"
PGPASSWORD=$DB_PW createdb -h 127.0.0.1 -U $DB_USER -l C -T template0 \
    -E utf8 openstack_citest

# tox, and tox-uv, which tox.ini requires (the machine's Python may be
# externally managed).
python3 -m pip install -q tox tox-uv \
    || python3 -m pip install -q --break-system-packages tox tox-uv

# reno crashes on a shallow clone (toolchain G5); pbr copes without tags.
if [ "$(git rev-parse --is-shallow-repository)" = "true" ]; then
    git fetch --unshallow || true
fi

# stevedore's entry-point cache can serve stale entry points (G14).
mkdir -p ~/.cache/python-entrypoints
touch ~/.cache/python-entrypoints/.disable
