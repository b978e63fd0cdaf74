#!/usr/bin/env bash
# Starts a one-node Ceph cluster on 127.0.0.1 for the S3 tests: one monitor, one OSD
# keeping objects in memory (memstore), and the RADOS Gateway (radosgw, beast frontend) with an S3 user
# whose access key and secret are both "darkdisk". Auth between the daemons is off; pools have one replica.
# Usage: ceph-rgw.sh DIR MON_PORT RGW_PORT   Prints "ready" once the S3 endpoint answers; the daemons'
# PIDs are in DIR/pids (the caller stops them), their logs in DIR/log.
# Settings the issue measured as needed: ms_mon_client_mode "crc secure" for clients (else radosgw loops on
# "get_initial_auth_request returned -13"), a fast paxos on the monitor (else ~13 s to start), tcp_nodelay
# on beast (else ~48 ms per small request). Found here: v1 addresses only, IPv4 only (this kernel has no
# IPv6, and an OSD then retries an IPv6 socket forever).
set -euo pipefail
dir=$1 monport=$2 rgwport=$3
mkdir -p "$dir"/{mon/a,osd/0,run,log,rgw}
fsid=$(cat /proc/sys/kernel/random/uuid)
conf=$dir/ceph.conf
cat > "$conf" <<CONF
[global]
fsid = $fsid
mon_host = v1:127.0.0.1:$monport
ms_bind_msgr2 = false
ms_bind_ipv4 = true
ms_bind_ipv6 = false
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_crush_chooseleaf_type = 0
osd_objectstore = memstore
memstore_device_bytes = 2147483648
run_dir = $dir/run
admin_socket = $dir/run/\$name.asok
log_file = $dir/log/\$name.log
pid_file = $dir/run/\$name.pid
keyring = $dir/keyring
[mon]
mon_data = $dir/mon/\$id
paxos_propose_interval = 0.05
paxos_min_wait = 0.01
[osd]
osd_data = $dir/osd/\$id
[client]
ms_mon_client_mode = crc secure
[client.rgw.a]
rgw_frontends = beast endpoint=127.0.0.1:$rgwport tcp_nodelay=1
rgw_data = $dir/rgw
CONF
ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
monmaptool --create --addv a [v1:127.0.0.1:$monport] --fsid "$fsid" "$dir/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring"
ceph-mon -c "$conf" -i a -f >>"$dir/log/daemons.out" 2>&1 </dev/null & echo $! > "$dir/pids"
uuid=$(cat /proc/sys/kernel/random/uuid)
id=$(timeout 60 ceph -c "$conf" osd new "$uuid") || { echo "ceph osd new failed or hung (exit $?)" >&2; exit 1; }
ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" 2>/dev/null
ceph-osd -c "$conf" -i "$id" -f >>"$dir/log/daemons.out" 2>&1 </dev/null & echo $! >> "$dir/pids"
radosgw -c "$conf" -n client.rgw.a -f >>"$dir/log/daemons.out" 2>&1 </dev/null & echo $! >> "$dir/pids"
# radosgw-admin has hung (not just been slow) on a loaded machine: bounded, and tried again.
for attempt in 1 2 3; do
  timeout 45 radosgw-admin -c "$conf" user create --uid=darkdisk --display-name=darkdisk --access-key=darkdisk --secret-key=darkdisk >/dev/null 2>&1 && break
  timeout 20 radosgw-admin -c "$conf" user info --uid=darkdisk >/dev/null 2>&1 && break
  [ "$attempt" -eq 3 ] && { echo "radosgw-admin could not create the user in 3 tries" >&2; exit 1; }
done
for _ in $(seq 300); do
  if curl -s -o /dev/null "http://127.0.0.1:$rgwport/"; then echo ready; exit 0; fi
  sleep 0.1
done
echo "radosgw did not answer" >&2; exit 1
