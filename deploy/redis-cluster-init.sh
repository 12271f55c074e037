#!/bin/sh
# Forms the scale profile's Redis Cluster (3 masters, 3 replicas) once:
# run by the one-shot redis-cluster-init service after the six nodes are
# healthy. A cluster already formed (a second `up`) is left alone.
set -eu

nodes="redis-node-1 redis-node-2 redis-node-3 redis-node-4 redis-node-5 redis-node-6"
if redis-cli -h redis-node-1 cluster info | grep -q 'cluster_state:ok'; then
    echo "redis cluster already formed"
    exit 0
fi
# redis-cli --cluster create wants addresses; the nodes announce their
# hostnames to clients (cluster-preferred-endpoint-type hostname), so a
# container that restarts with another address is still found.
addrs=""
for n in $nodes; do
    ip=$(getent hosts "$n" | awk '{print $1; exit}')
    addrs="$addrs $ip:6379"
done
# shellcheck disable=SC2086 # one argument per address
redis-cli --cluster create $addrs --cluster-replicas 1 --cluster-yes
for _ in $(seq 1 30); do
    if redis-cli -h redis-node-1 cluster info | grep -q 'cluster_state:ok'; then
        echo "redis cluster formed"
        exit 0
    fi
    sleep 1
done
echo "redis cluster did not reach cluster_state:ok" >&2
exit 1
