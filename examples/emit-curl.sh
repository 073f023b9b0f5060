#!/usr/bin/env bash
# Sends one signed event with curl and openssl only (request signing as docs/api.md describes it).
#   REALTIME_URL=http://127.0.0.1:4000 REALTIME_KEY=... REALTIME_SECRET=... bash examples/emit-curl.sh
set -euo pipefail
url=${REALTIME_URL:-http://127.0.0.1:4000}
path=/service/realtime/emit
body='{"rooms":["lobby"],"event":"chat","data":{"text":"hello from curl"}}'
ts=$(date +%s)
# publish key = HMAC-SHA256(secret, label); the signature = HMAC-SHA256(publish key, message).
# The secret goes to openssl as hex, so every character of it is used as is (docs/api.md).
secret_hex=$(printf '%s' "${REALTIME_SECRET}" | od -An -v -tx1 | tr -d ' \n')
publish_key=$(printf '%s' 'service-realtime publish v1' | openssl dgst -sha256 -mac HMAC -macopt "hexkey:${secret_hex}" -r | cut -d' ' -f1)
body_hash=$(printf '%s' "$body" | openssl dgst -sha256 -r | cut -d' ' -f1)
signature=$(printf '%s\nPOST\n%s\n%s' "$ts" "$path" "$body_hash" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:${publish_key}" -r | cut -d' ' -f1)
curl -sS -X POST "$url$path" \
  -H "Content-Type: application/json" \
  -H "X-Service-Site: ${REALTIME_KEY}" \
  -H "X-Service-Timestamp: ${ts}" \
  -H "X-Service-Signature: ${signature}" \
  --data-binary "$body"
echo
