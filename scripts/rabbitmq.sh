#!/usr/bin/env bash
# Makes sure a RabbitMQ broker answers on 127.0.0.1:5672 (guest/guest), for the group-mode tests:
# uses a running one, else starts the installed server, else installs it from Debian's packages
# first. Idempotent; waits up to 90 s for the broker to accept connections; fails loudly (group
# tests must never be skipped silently).
set -euo pipefail

host=127.0.0.1
port=5672

step() { printf '==> %s\n' "$*"; }

listening() {
    (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

if listening; then
    step "RabbitMQ already listening on $host:$port"
    exit 0
fi

if ! command -v rabbitmq-server >/dev/null 2>&1; then
    step "installing rabbitmq-server (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq rabbitmq-server >/dev/null
fi

step "starting rabbitmq-server"
rabbitmq-server -detached || true

for _ in $(seq 1 90); do
    if listening; then
        step "RabbitMQ is up on $host:$port"
        exit 0
    fi
    sleep 1
done
echo "error: RabbitMQ did not start listening on $host:$port within 90 s" >&2
exit 1
