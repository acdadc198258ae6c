#!/bin/sh
# Installs Debian's Chromium for the browser tests (test/browser) when /usr/bin/chromium is missing.
# The tests drive it through playwright-core; npm never downloads a browser. A failed install is
# reported here but does not stop CI: the browser tests then fail with a message that says so.
set -u
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core; then
  /usr/bin/chromium --version || true
else
  echo "browser-deps: could not install chromium with apt-get; the browser tests will fail" >&2
fi
exit 0
