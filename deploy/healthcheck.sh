#!/usr/bin/env bash
# Container health check without curl or wget: HTTP GET over bash's /dev/tcp, healthy on a
# 200 status line. compose.yaml mounts it into each image.
#
#   healthcheck.sh PATH [PORT] [HOST]      e.g. healthcheck.sh /readyz   (port 9464, 127.0.0.1)
set -euo pipefail
path="${1:?usage: healthcheck.sh PATH [PORT] [HOST]}"
port="${2:-9464}"
host="${3:-127.0.0.1}"
exec 3<>"/dev/tcp/$host/$port"
printf 'GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$path" "$host" >&3
IFS= read -r -t 5 status <&3
case "$status" in
  "HTTP/1."?" 200 "*) exit 0 ;;
  *)
    # Show the reason line (/readyz answers 503 with one line saying why).
    printf '%s\n' "${status%$'\r'}" >&2
    exit 1
    ;;
esac
