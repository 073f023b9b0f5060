#!/usr/bin/env bash
# Installs what the tests need beyond npm: Debian's Chromium (browser tests drive it with
# playwright-core), redis-server (the Redis engine's tests start their own on 127.0.0.1), and nginx
# with openssl (test/deploy-nginx.test.ts runs deploy/nginx/realtime.conf with a certificate it makes),
# and iproute2 (ip and tc, for the shaped-link suites).
# Off Debian, point the tests at any Chromium with CHROMIUM_PATH=/path/to/chrome and at a
# redis-server binary with REDIS_SERVER_PATH=/path/to/redis-server (and redis-cli with REDIS_CLI_PATH),
# at an nginx binary with NGINX_PATH=/path/to/nginx, and nothing is installed.
set -euo pipefail
missing=()
if [ -n "${CHROMIUM_PATH:-}" ]; then
  [ -x "$CHROMIUM_PATH" ] || { echo "test-deps: CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file" >&2; exit 1; }
else
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi
if [ -n "${REDIS_SERVER_PATH:-}" ]; then
  [ -x "$REDIS_SERVER_PATH" ] || { echo "test-deps: REDIS_SERVER_PATH=$REDIS_SERVER_PATH is not an executable file" >&2; exit 1; }
else
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
fi
# The Redis Cluster tests create their cluster with redis-cli (Debian: redis-tools, which
# redis-server depends on). REDIS_CLI_PATH, or a redis-cli next to REDIS_SERVER_PATH, is used first.
if [ -n "${REDIS_CLI_PATH:-}" ]; then
  [ -x "$REDIS_CLI_PATH" ] || { echo "test-deps: REDIS_CLI_PATH=$REDIS_CLI_PATH is not an executable file" >&2; exit 1; }
elif [ -n "${REDIS_SERVER_PATH:-}" ] && [ -x "$(dirname "$REDIS_SERVER_PATH")/redis-cli" ]; then
  :
else
  command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
fi
if [ -n "${NGINX_PATH:-}" ]; then
  [ -x "$NGINX_PATH" ] || { echo "test-deps: NGINX_PATH=$NGINX_PATH is not an executable file" >&2; exit 1; }
else
  command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
fi
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# The shaped-link suites (test/browser/shaped-link.ts, as root) make network namespaces and veth
# pairs with ip and shape them with tc (Debian: iproute2).
{ command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1; } || missing+=(iproute2)
[ ${#missing[@]} -eq 0 ] && exit 0
command -v apt-get >/dev/null 2>&1 || {
  echo "test-deps: ${missing[*]} is missing and there is no apt-get here: install them and set CHROMIUM_PATH / REDIS_SERVER_PATH" >&2
  exit 1
}
echo "test-deps: installing ${missing[*]} from Debian's packages"
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "test-deps: run as root or install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
