#!/usr/bin/env bash
# Installs what the tests need beyond npm: Debian's Chromium (browser tests drive it with
# playwright-core). The Redis engine, when it lands, adds redis-server here.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "test-deps: installing ${missing[*]} from Debian's packages"
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "test-deps: run as root or install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
