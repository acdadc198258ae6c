#!/bin/sh
# Installs Debian's nginx for the reverse proxy test (test/ops/nginx.test.ts) when /usr/sbin/nginx
# is missing; openssl makes its test certificate. A failed install is reported here but does not
# stop CI: the test then fails with a message that says so.
set -u
if [ -x /usr/sbin/nginx ] && command -v openssl >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends nginx-light openssl; then
  /usr/sbin/nginx -v || true
else
  echo "proxy-deps: could not install nginx with apt-get; the reverse proxy test will fail" >&2
fi
exit 0
