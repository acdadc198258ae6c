#!/usr/bin/env bash
# Starts PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) for the multi-process suites when
# they are stopped. Idempotent, and never fails the run: a service that cannot start only makes
# its suites skip with a message.
set -u

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

wait_for() { # $1: check function; at most ~10 s
  for _ in $(seq 1 50); do "$1" && return 0; sleep 0.2; done
  return 1
}

if command -v pg_isready >/dev/null 2>&1 && ! pg_up; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    for version in $(ls /etc/postgresql); do
      pg_ctlcluster --skip-systemctl-redirect "$version" main start >/dev/null 2>&1 || true
    done
  fi
  wait_for pg_up || echo ".ci/services.sh: PostgreSQL did not start; its suites will skip" >&2
fi

if command -v redis-server >/dev/null 2>&1 && ! redis_up; then
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log >/dev/null 2>&1 || true
  wait_for redis_up || echo ".ci/services.sh: Redis did not start; its suites will skip" >&2
fi

exit 0
