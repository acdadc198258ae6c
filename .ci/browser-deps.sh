#!/bin/sh
# Installs Debian's Chromium for the browser tests (test/browser) when it is missing.
# The tests drive it through playwright-core at /usr/bin/chromium; no browser is downloaded by npm.
set -eu
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core
/usr/bin/chromium --version
